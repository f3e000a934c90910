// The one place where an absl::Status becomes a grpc::Status (design.md,
// "Status codes"), or into the favor.v1.Status that answers one message of
// an EmbedStream. abseil's codes are gRPC's codes, so the code maps 1:1 and
// the message is kept. A RESOURCE_EXHAUSTED status carrying a retry hint
// (server/batching/retry_hint.h) also sets the trailing metadata
// `retry-after-ms` (whole milliseconds, rounded up), or the message's
// `retry_after_micros`, so that clients need not parse the message, which
// already says "retry after ...".
#ifndef FAVOR_SERVER_SERVICE_STATUS_MAPPING_H_
#define FAVOR_SERVER_SERVICE_STATUS_MAPPING_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "favor/v1/favor.pb.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace favor::service {

// The trailing metadata key of the retry hint.
inline constexpr absl::string_view kRetryAfterMsTrailer = "retry-after-ms";

// `status` as a gRPC status: same code, same message. With `context` (may be
// null) and a retry hint, adds the `retry-after-ms` trailer to it.
grpc::Status ToGrpcStatus(const absl::Status& status,
                          grpc::ServerContextBase* context = nullptr);

// `status` (not OK) as the error of an EmbedStream message: same code, same
// message, and with a retry hint its retry_after_micros (else 0).
void ToStreamError(const absl::Status& status, v1::Status* error);

// The retry hint of `status` in whole milliseconds, rounded up; nullopt when
// it carries none.
std::optional<int64_t> RetryAfterMillis(const absl::Status& status);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_STATUS_MAPPING_H_
