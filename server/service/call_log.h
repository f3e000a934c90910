// A gRPC call's request id, traceparent and access-log line
// (server/common/request_id.h, access_log.h), at the service's edge.
//
// Every Favor call reads `x-request-id` and `traceparent` from its metadata
// and echoes the id (the client's, or a new one) in its initial metadata; a
// malformed id or an oversized traceparent is answered INVALID_ARGUMENT
// before anything else runs. When the call ends, one line is written.
//
// The HTTP front's calls (over the in-process channel, with the service's
// in-process key) are the exception: the front writes one line per HTTP
// request itself, with its route and HTTP status. Their calls write no line
// and instead answer what the line needs in trailing metadata (the Usage
// trailers below), which the front reads (service_client.h).
#ifndef FAVOR_SERVER_SERVICE_CALL_LOG_H_
#define FAVOR_SERVER_SERVICE_CALL_LOG_H_

#include <map>
#include <memory>

#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"
#include "server/common/access_log.h"
#include "server/common/request_id.h"

namespace favor::service {

// How one call is logged.
struct CallLogging {
  AccessLog* log = nullptr;  // null: no line
  CallIds ids;
  // A call of the HTTP front: usage trailers instead of a line.
  bool in_process = false;
  std::string peer;
};

// Reads `context`'s ids (request_id.h) and echoes the request id in its
// initial metadata; call before anything is sent. `log` may be null.
CallLogging StartCallLogging(grpc::CallbackServerContext* context,
                             AccessLog* log, absl::string_view in_process_key);

// Ends the call's record: its method, status, duration and peer are set
// here, the rest (model, counts, times) by the caller. Writes the line, or,
// for an in-process call, adds the usage trailers to `context` (before
// Finish).
void EndCallLogging(const CallLogging& logging, absl::string_view method,
                    const grpc::Status& status, absl::Duration duration,
                    AccessRecord record, grpc::CallbackServerContext* context);

// The usage trailers, and their reading by the HTTP front: the model
// (binary metadata: a name need not be ASCII), inputs, tokens, queue and
// compute microseconds; each present only when known.
inline constexpr absl::string_view kUsageModelTrailer = "x-favor-model-bin";
inline constexpr absl::string_view kUsageInputsTrailer = "x-favor-inputs";
inline constexpr absl::string_view kUsageTokensTrailer = "x-favor-tokens";
inline constexpr absl::string_view kUsageQueueTrailer = "x-favor-queue-us";
inline constexpr absl::string_view kUsageComputeTrailer = "x-favor-compute-us";

void ReadUsageTrailers(
    const std::multimap<grpc::string_ref, grpc::string_ref>& trailers,
    AccessRecord* record);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_CALL_LOG_H_
