// FinishEmbedding and NormalizeRows (output_vectors.h): Matryoshka's cut,
// then renormalisation of what is kept.
#include "server/service/output_vectors.h"

#include <cmath>
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

}  // namespace
}  // namespace favor::service
