// The retry policy of RetryOptions: which failures are retried, how long to
// wait before the next attempt (exponential backoff with jitter, at least
// the server's hint), and never past the call's deadline.
#ifndef FAVOR_CLIENT_SRC_RETRY_H_
#define FAVOR_CLIENT_SRC_RETRY_H_

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "favor/client_options.h"
#include "grpcpp/client_context.h"

namespace favor::client_internal {

// The trailing metadata key of the server's retry hint on unary calls
// (server/service/status_mapping.h).
inline constexpr char kRetryAfterMsTrailer[] = "retry-after-ms";

// Whether `status` is a failure that `options` retries.
bool IsRetryable(const absl::Status& status, const RetryOptions& options);

// The retry hint of a finished unary call: its `retry-after-ms` trailer, or
// nullopt when there is none (or it does not parse).
std::optional<absl::Duration> RetryHint(const grpc::ClientContext& context);

// Draws jitter for the waits; thread-safe.
class Jitter {
 public:
  // Uniform in [1 - fraction, 1 + fraction].
  double Factor(double fraction);

 private:
  absl::Mutex mu_;
  absl::BitGen random_ ABSL_GUARDED_BY(mu_);
};

// The wait before the next attempt after `attempts_made` attempts ended in
// `status` (with the server's `hint`, if any), or nullopt when there is no
// next attempt: the failure is not retryable, the attempts are used up, or
// the wait would end at or after `deadline`.
std::optional<absl::Duration> RetryDelay(const RetryOptions& options,
                                         int attempts_made,
                                         const absl::Status& status,
                                         std::optional<absl::Duration> hint,
                                         absl::Time now, absl::Time deadline,
                                         Jitter& jitter);

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_RETRY_H_
