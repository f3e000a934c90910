// The batcher's notion of time: reading it, and waiting on it.
//
// Every time-dependent decision of the batcher (queue delay, deadlines, age
// bound, drain timeout) reads Clock::Now(), and every wait of its batch
// former goes through Clock::AwaitWithDeadline(). Production code uses
// RealClock; tests use FakeClock (fake_clock.h), whose time only moves when a
// test advances it, so that no test sleeps to wait for a timeout.
#ifndef FAVOR_SERVER_BATCHING_CLOCK_H_
#define FAVOR_SERVER_BATCHING_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace favor::batching {

class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() const = 0;

  // With `mu` held, waits until `condition` holds or Now() reaches `deadline`,
  // whichever comes first; `mu` is released while waiting and held again on
  // return, as with absl::Mutex::AwaitWithDeadline. Returns the value of
  // `condition` on return. absl::InfiniteFuture() waits for the condition
  // alone. Like any absl::Condition, `condition` is evaluated with `mu` held
  // and must be cheap and side-effect free.
  virtual bool AwaitWithDeadline(absl::Mutex* mu,
                                 const absl::Condition& condition,
                                 absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};

// Wall-clock time (absl::Now()) and absl::Mutex's own timed waits.
class RealClock final : public Clock {
 public:
  // A process-wide instance; never destroyed.
  static RealClock* Get();

  absl::Time Now() const override;
  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_CLOCK_H_
