// Request ids and W3C trace context of one call (docs/deployment.md, "Access
// logs"): what an HTTP request's `X-Request-Id` and `traceparent` headers,
// or a gRPC call's `x-request-id` and `traceparent` metadata, say, checked
// once at each protocol's edge.
//
// A request id is kept when the client sends one and made when it does not;
// the server echoes it (HTTP: the response header; gRPC: initial metadata)
// and writes it in the call's access-log line. A traceparent is only carried
// into that line (Favor starts no spans of its own).
//
// Limits: an id is 1 to kMaxRequestIdBytes visible ASCII characters
// (0x21-0x7E: no space, no control, no UTF-8), so that it can be echoed as a
// header and logged as it is; anything else, or a second id, is refused
// INVALID_ARGUMENT (HTTP 400). A traceparent over kMaxTraceparentBytes, or a
// second one, is refused likewise. A traceparent within the bound that does
// not follow W3C Trace Context's grammar is ignored, as that
// recommendation asks of a receiver ("restart the trace"): the call is served
// and its line has no traceparent.
#ifndef FAVOR_SERVER_COMMON_REQUEST_ID_H_
#define FAVOR_SERVER_COMMON_REQUEST_ID_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace favor {

// The header (HTTP, any case) and the gRPC metadata key.
inline constexpr absl::string_view kRequestIdHeader = "x-request-id";
inline constexpr absl::string_view kTraceparentHeader = "traceparent";

inline constexpr size_t kMaxRequestIdBytes = 128;
// W3C's version 00 takes 55 bytes; later versions may append fields.
inline constexpr size_t kMaxTraceparentBytes = 256;

// OK, or INVALID_ARGUMENT naming the limit the id breaks.
absl::Status CheckRequestId(absl::string_view id);

// 128 random bits as 32 lowercase hex digits.
std::string NewRequestId();

// True when `value` is a W3C traceparent (version 00 exactly; a later
// version's first four fields, then the end or a '-'), with a trace id and
// a parent id that are not all zeros.
bool IsValidTraceparent(absl::string_view value);

// What a call's headers say, once checked.
struct CallIds {
  // The client's id, or a new one (also when `status` is not OK, so that the
  // refusal can be echoed and logged with an id).
  std::string request_id;
  // The client's traceparent when valid; empty otherwise.
  std::string traceparent;
  // INVALID_ARGUMENT when the call must be refused (see above).
  absl::Status status;
};

// From every value the call has of each header (usually none or one).
CallIds ReadCallIds(absl::Span<const absl::string_view> request_ids,
                    absl::Span<const absl::string_view> traceparents);

}  // namespace favor

#endif  // FAVOR_SERVER_COMMON_REQUEST_ID_H_
