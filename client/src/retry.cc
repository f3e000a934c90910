#include "retry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace favor::client_internal {

namespace {

// gRPC's own RESOURCE_EXHAUSTED for a message over the size limit
// (ClientOptions.max_message_size_bytes or the server's): not a full queue,
// and the same message would fail again.
bool IsMessageSizeError(const absl::Status& status) {
  return absl::StartsWith(status.message(), "Sent message larger than max") ||
         absl::StartsWith(status.message(), "Received message larger than max");
}

// favor-server's RESOURCE_EXHAUSTED for a call that can never run there:
// an input that could never fit in its memory budget, even alone
// (docs/server.md, "Memory budget"), a call larger than its whole queue, or
// one whose answer could exceed the message limit. The same call would be
// refused again (HTTP answers them 413, not 429).
bool IsNeverFitsError(const absl::Status& status) {
  return absl::EndsWith(status.message(), "it can never run here");
}

}  // namespace

bool IsRetryable(const absl::Status& status, const RetryOptions& options) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      return options.retry_on_unavailable;
    case absl::StatusCode::kResourceExhausted:
      return options.retry_on_resource_exhausted &&
             !IsMessageSizeError(status) && !IsNeverFitsError(status);
    default:
      return false;
  }
}

std::optional<absl::Duration> RetryHint(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto found = trailers.find(kRetryAfterMsTrailer);
  if (found == trailers.end()) return std::nullopt;
  int64_t millis = 0;
  const absl::string_view text(found->second.data(), found->second.size());
  if (!absl::SimpleAtoi(text, &millis) || millis < 0) return std::nullopt;
  return absl::Milliseconds(millis);
}

double Jitter::Factor(double fraction) {
  if (fraction <= 0) return 1.0;
  absl::MutexLock lock(&mu_);
  return absl::Uniform(absl::IntervalClosed, random_, 1.0 - fraction,
                       1.0 + fraction);
}

std::optional<absl::Duration> RetryDelay(const RetryOptions& options,
                                         int attempts_made,
                                         const absl::Status& status,
                                         std::optional<absl::Duration> hint,
                                         absl::Time now, absl::Time deadline,
                                         Jitter& jitter) {
  if (!IsRetryable(status, options) || attempts_made >= options.max_attempts) {
    return std::nullopt;
  }
  const double growth =
      std::pow(options.backoff_multiplier, std::max(0, attempts_made - 1));
  absl::Duration delay =
      std::min(options.max_backoff, options.initial_backoff * growth);
  delay = delay * jitter.Factor(options.jitter_fraction);
  if (hint.has_value() && options.honor_retry_hint) {
    delay = std::max(delay, *hint);
  }
  if (now + delay >= deadline) return std::nullopt;
  return delay;
}

}  // namespace favor::client_internal
