#include "client/loadgen/poisson_arrivals.h"

namespace favor::bench {

PoissonArrivals::PoissonArrivals(double rate_per_second, uint64_t seed)
    : rate_per_second_(rate_per_second), random_(seed) {}

absl::Duration PoissonArrivals::Next() {
  // Summed in double seconds rather than in Durations, so that rounding of
  // each gap to a nanosecond does not accumulate over a long run.
  elapsed_seconds_ += random_.Exponential(rate_per_second_);
  return absl::Seconds(elapsed_seconds_);
}

}  // namespace favor::bench
