// FinishEmbedding and NormalizeRows (output_vectors.h): Matryoshka's cut,
// then renormalisation of what is kept; and the quantised forms of
// favor.proto's EmbeddingType, against values worked out by hand (the
// Python peer test checks them against numpy on the real model).
#include "server/service/output_vectors.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::service {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;

TEST(OutputVectorsTest, CutsThenRenormalisesTheKeptValues) {
  const std::vector<float> raw = {3, 4, 12, 100};
  EXPECT_THAT(FinishEmbedding(raw, 0, false), ElementsAre(3, 4, 12, 100));
  EXPECT_THAT(FinishEmbedding(raw, 2, false), ElementsAre(3, 4));
  EXPECT_THAT(FinishEmbedding(raw, 2, true),
              ElementsAre(FloatNear(0.6f, 1e-7), FloatNear(0.8f, 1e-7)));
  EXPECT_THAT(
      FinishEmbedding(raw, 3, true),
      ElementsAre(FloatNear(3 / 13.0f, 1e-7), FloatNear(4 / 13.0f, 1e-7),
                  FloatNear(12 / 13.0f, 1e-7)));
  // A zero vector stays zero (the norm's floor is 1e-12).
  EXPECT_THAT(FinishEmbedding(std::vector<float>{0, 0}, 0, true),
              ElementsAre(0, 0));
}

TEST(OutputVectorsTest, NormalizesEachRow) {
  std::vector<float> rows = {3, 4, 0, 5, 0, 0};
  NormalizeRows(2, &rows);
  EXPECT_THAT(rows, ElementsAre(FloatNear(0.6f, 1e-7), FloatNear(0.8f, 1e-7), 0,
                                1, 0, 0));
}

std::vector<int> Signed(const std::string& bytes) {
  std::vector<int> out;
  for (char byte : bytes) out.push_back(static_cast<int8_t>(byte));
  return out;
}

std::vector<int> Unsigned(const std::string& bytes) {
  std::vector<int> out;
  for (char byte : bytes) out.push_back(static_cast<uint8_t>(byte));
  return out;
}

TEST(QuantizeTest, ScalesRoundsClipsAndPacksSignBitsMostSignificantFirst) {
  const std::vector<float> values = {1, -1, 0.5, -0.5, 0, 0.1, 2, -0.004, 0.25};
  EmbeddingTypes types;
  types.int8 = types.uint8 = types.binary = types.ubinary = true;
  v1::QuantizedEmbedding out;
  Quantize(values, types, &out);
  // round(127x), halves away from zero (-63.5 -> -64), clipped (254 -> 127).
  EXPECT_THAT(Signed(out.int8()),
              ElementsAre(127, -127, 64, -64, 0, 13, 127, -1, 32));
  // round(127.5x + 127.5): 0 -> 127.5 -> 128, 2 -> 382.5 -> 255.
  EXPECT_THAT(Unsigned(out.uint8()),
              ElementsAre(255, 0, 191, 64, 128, 140, 255, 127, 159));
  // x > 0: 1,0,1,0, 0,1,1,0 | 1 then seven zero bits of padding.
  EXPECT_THAT(Unsigned(out.ubinary()), ElementsAre(0b10100110, 0b10000000));
  EXPECT_THAT(Signed(out.binary()), ElementsAre(0xA6 - 128, 0));
}

TEST(QuantizeTest, OnlyTheTypesAsked) {
  EmbeddingTypes types;
  types.uint8 = true;
  v1::QuantizedEmbedding out;
  Quantize(std::vector<float>{0.5f}, types, &out);
  EXPECT_EQ(out.uint8().size(), 1u);
  EXPECT_TRUE(out.int8().empty() && out.binary().empty() &&
              out.ubinary().empty());
}

TEST(QuantizeTest, ResolvesTheListOnce) {
  google::protobuf::RepeatedField<int> types;
  auto resolved = ResolveEmbeddingTypes(types);
  ASSERT_TRUE(resolved.ok());
  EXPECT_TRUE(resolved->float_values);
  EXPECT_FALSE(resolved->any_quantized());
  types.Add(v1::EMBEDDING_TYPE_BINARY);
  resolved = ResolveEmbeddingTypes(types);
  ASSERT_TRUE(resolved.ok());
  EXPECT_FALSE(resolved->float_values);
  EXPECT_TRUE(resolved->binary && !resolved->ubinary && !resolved->int8);
  types.Add(v1::EMBEDDING_TYPE_FLOAT);
  resolved = ResolveEmbeddingTypes(types);
  ASSERT_TRUE(resolved.ok());
  EXPECT_TRUE(resolved->float_values && resolved->binary);
  types.Add(v1::EMBEDDING_TYPE_BINARY);
  EXPECT_THAT(ResolveEmbeddingTypes(types).status().message(),
              ::testing::HasSubstr("embedding_types[2] repeats"));
  types.Set(2, v1::EMBEDDING_TYPE_UNSPECIFIED);
  EXPECT_EQ(ResolveEmbeddingTypes(types).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::service
