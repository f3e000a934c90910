#include "server/service/status_mapping.h"

#include <string>

#include "gtest/gtest.h"
#include "server/batching/retry_hint.h"

namespace favor::service {
namespace {

TEST(StatusMappingTest, EveryCodeMapsOneToOneWithItsMessage) {
  const struct {
    absl::Status status;
    grpc::StatusCode code;
  } cases[] = {
      {absl::InvalidArgumentError("inputs is empty"),
       grpc::StatusCode::INVALID_ARGUMENT},
      {absl::NotFoundError("model 'x' not found"), grpc::StatusCode::NOT_FOUND},
      {absl::ResourceExhaustedError("queue full"),
       grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::DeadlineExceededError("late"),
       grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::CancelledError("gone"), grpc::StatusCode::CANCELLED},
      {absl::UnavailableError("draining"), grpc::StatusCode::UNAVAILABLE},
      {absl::UnauthenticatedError("no token"),
       grpc::StatusCode::UNAUTHENTICATED},
      {absl::InternalError("c10 said no"), grpc::StatusCode::INTERNAL},
      {absl::FailedPreconditionError("p"),
       grpc::StatusCode::FAILED_PRECONDITION},
      {absl::UnimplementedError("u"), grpc::StatusCode::UNIMPLEMENTED},
  };
  for (const auto& c : cases) {
    const grpc::Status mapped = ToGrpcStatus(c.status);
    EXPECT_EQ(mapped.error_code(), c.code) << c.status;
    EXPECT_EQ(mapped.error_message(), std::string(c.status.message()));
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusMappingTest, RetryHintInMillisecondsRoundedUp) {
  const absl::Status status = batching::ResourceExhaustedWithRetry(
      "queue of model 'm' is full", absl::Microseconds(2500));
  EXPECT_EQ(RetryAfterMillis(status), 3);
  const grpc::Status mapped = ToGrpcStatus(status);
  EXPECT_EQ(mapped.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(mapped.error_message().find("retry after"), std::string::npos);
  EXPECT_EQ(RetryAfterMillis(absl::ResourceExhaustedError("no hint")),
            std::nullopt);
  EXPECT_EQ(RetryAfterMillis(absl::InternalError("x")), std::nullopt);
}

}  // namespace
}  // namespace favor::service
