#include "server/service/status_mapping.h"

#include <string>

#include "server/batching/retry_hint.h"

namespace favor::service {

std::optional<int64_t> RetryAfterMillis(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kResourceExhausted) {
    return std::nullopt;
  }
  std::optional<absl::Duration> retry_after = batching::RetryAfter(status);
  if (!retry_after.has_value()) return std::nullopt;
  return absl::ToInt64Milliseconds(
      absl::Ceil(*retry_after, absl::Milliseconds(1)));
}

grpc::Status ToGrpcStatus(const absl::Status& status,
                          grpc::ServerContextBase* context) {
  if (status.ok()) return grpc::Status::OK;
  std::optional<int64_t> retry_after_ms = RetryAfterMillis(status);
  if (context != nullptr && retry_after_ms.has_value()) {
    context->AddTrailingMetadata(std::string(kRetryAfterMsTrailer),
                                 std::to_string(*retry_after_ms));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace favor::service
