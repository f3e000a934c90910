// A retry hint carried by a RESOURCE_EXHAUSTED status: how long the caller
// should wait before trying again. It is both in the message (for people)
// and in a status payload (for the service, which turns it into gRPC
// RetryInfo or a `retry-after` trailer without parsing the message).
#ifndef FAVOR_SERVER_BATCHING_RETRY_HINT_H_
#define FAVOR_SERVER_BATCHING_RETRY_HINT_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace favor::batching {

// The status payload's type URL; its value is the delay in whole
// microseconds, as decimal text.
inline constexpr absl::string_view kRetryAfterPayloadUrl =
    "favor.batching/retry_after_micros";

// RESOURCE_EXHAUSTED with `message`, "; retry after <delay>" appended, and
// the payload set. `retry_after` is rounded up to whole microseconds.
absl::Status ResourceExhaustedWithRetry(absl::string_view message,
                                        absl::Duration retry_after);

// The hint of a status made by ResourceExhaustedWithRetry(), or nullopt.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_RETRY_HINT_H_
