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

void ToStreamError(const absl::Status& status, v1::Status* error) {
  error->set_code(static_cast<int32_t>(status.code()));
  error->set_message(std::string(status.message()));
  error->set_retry_after_micros(0);
  if (status.code() != absl::StatusCode::kResourceExhausted) return;
  std::optional<absl::Duration> retry_after = batching::RetryAfter(status);
  if (retry_after.has_value()) {
    error->set_retry_after_micros(absl::ToInt64Microseconds(*retry_after));
  }
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
