#include "server/batching/clock.h"

namespace favor::batching {

RealClock* RealClock::Get() {
  static RealClock* const clock = new RealClock();
  return clock;
}

absl::Time RealClock::Now() const { return absl::Now(); }

bool RealClock::AwaitWithDeadline(absl::Mutex* mu,
                                  const absl::Condition& condition,
                                  absl::Time deadline) {
  return mu->AwaitWithDeadline(condition, deadline);
}

}  // namespace favor::batching
