#include "server/batching/retry_hint.h"

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::batching {
namespace {

using ::testing::HasSubstr;

TEST(RetryHintTest, RoundTripsThroughTheStatus) {
  const absl::Status status =
      ResourceExhaustedWithRetry("queue full", absl::Milliseconds(25));
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("queue full; retry after 25ms"));
  EXPECT_EQ(RetryAfter(status), absl::Milliseconds(25));
}

TEST(RetryHintTest, RoundsUpToWholeMicroseconds) {
  const absl::Status status =
      ResourceExhaustedWithRetry("full", absl::Nanoseconds(1500));
  EXPECT_EQ(RetryAfter(status), absl::Microseconds(2));
}

TEST(RetryHintTest, AbsentFromOtherStatuses) {
  EXPECT_EQ(RetryAfter(absl::OkStatus()), std::nullopt);
  EXPECT_EQ(RetryAfter(absl::ResourceExhaustedError("no hint")), std::nullopt);
  absl::Status unavailable = absl::UnavailableError("x");
  unavailable.SetPayload(kRetryAfterPayloadUrl, absl::Cord("5"));
  EXPECT_EQ(RetryAfter(unavailable), std::nullopt);
  absl::Status garbled = absl::ResourceExhaustedError("x");
  garbled.SetPayload(kRetryAfterPayloadUrl, absl::Cord("soon"));
  EXPECT_EQ(RetryAfter(garbled), std::nullopt);
}

}  // namespace
}  // namespace favor::batching
