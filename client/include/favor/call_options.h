// What every favor::Client call shares: its deadline (CallOptions), how to
// hand back an asynchronous result (Callback), the queue priority of a
// request, and the server's timings of it.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_CALL_OPTIONS_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_CALL_OPTIONS_H_

#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace favor {

// Per-call settings. The deadline covers the whole call, retries and their
// waits included; a call that runs past it fails with DEADLINE_EXCEEDED.
struct CallOptions {
  // Time allowed for the call from the moment it is made; zero (the
  // default) means ClientOptions.default_timeout. absl::InfiniteDuration()
  // means no deadline. Ignored when `deadline` is set.
  absl::Duration timeout = absl::ZeroDuration();
  // An absolute deadline; absl::InfiniteFuture() (the default) means "use
  // `timeout`".
  absl::Time deadline = absl::InfiniteFuture();
  // Wait for a connection to the server instead of failing at once with
  // UNAVAILABLE while none can be made (gRPC's wait_for_ready). The deadline
  // still applies.
  bool wait_for_ready = false;
};

// How a request is ordered in the server's queue (favor.v1.Priority).
enum class Priority {
  // Interactive and bulk traffic alike.
  kNormal = 1,
  // Served before normal requests waiting in the same queue; normal ones are
  // never starved.
  kHigh = 2,
};

// Where the time of a request went on the server (favor.v1.ServerTiming).
struct ServerTiming {
  // From admission to the queue to the start of the computing batch.
  absl::Duration queue_time = absl::ZeroDuration();
  // That batch's computation (shared with the other requests in it).
  absl::Duration compute_time = absl::ZeroDuration();
};

// Receives the result of an asynchronous call, exactly once. It runs on one
// of gRPC's threads or the client's own (never while a lock of the caller's
// is held by the library), so it should return quickly: hand long work to
// another thread. It may also run on the calling thread before the *Async
// function returns, when the call fails before being sent.
template <typename T>
using Callback = std::function<void(absl::StatusOr<T>)>;

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_CALL_OPTIONS_H_
