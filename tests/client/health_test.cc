// grpc.health.v1 Check messages written and read by hand (src/health.h).
#include "health.h"

#include <string>
#include <vector>

#include "grpcpp/support/slice.h"
#include "gtest/gtest.h"

namespace favor::client_internal {
namespace {

grpc::ByteBuffer BufferOf(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

absl::StatusOr<ServingStatus> Parse(const std::string& bytes) {
  return ParseHealthCheckResponse(BufferOf(bytes));
}

TEST(HealthTest, RequestCarriesTheServiceName) {
  EXPECT_EQ(BytesOf(HealthCheckRequest("")), "");
  EXPECT_EQ(BytesOf(HealthCheckRequest("favor.v1.Favor")),
            std::string("\x0a\x0e", 2) + "favor.v1.Favor");
}

TEST(HealthTest, ResponseStatus) {
  EXPECT_EQ(*Parse(""), ServingStatus::kUnknown);
  EXPECT_EQ(*Parse("\x08\x01"), ServingStatus::kServing);
  EXPECT_EQ(*Parse("\x08\x02"), ServingStatus::kNotServing);
  EXPECT_EQ(*Parse("\x08\x03"), ServingStatus::kUnknown);  // SERVICE_UNKNOWN
}

TEST(HealthTest, OtherFieldsOfEveryWireTypeAreSkipped) {
  const std::string others =
      std::string("\x10\x05", 2) +                       // 2: varint
      std::string("\x19", 1) + std::string(8, '\x08') +  // 3: 64-bit
      std::string("\x22\x03\x08\x02\x08", 5) +           // 4: bytes
      std::string("\x2d", 1) + std::string(4, '\x08');   // 5: 32-bit
  EXPECT_EQ(*Parse(others + "\x08\x01"), ServingStatus::kServing);
  EXPECT_EQ(*Parse(std::string("\x08\x01", 2) + others),
            ServingStatus::kServing);
}

TEST(HealthTest, MalformedResponsesAreInternal) {
  for (const std::string& bytes :
       {std::string("\x08", 1), std::string("\x08\x81", 2),
        std::string("\x22\x05\x01", 3), std::string("\x19\x00\x00", 3),
        std::string("\x0b\x01", 2) /* wire type 3 */}) {
    EXPECT_EQ(Parse(bytes).status().code(), absl::StatusCode::kInternal)
        << testing::PrintToString(bytes);
  }
}

}  // namespace
}  // namespace favor::client_internal
