// Open-loop send times: a Poisson process of a given rate, drawn from a seed.
// The gaps between arrivals are independent and exponential (mean
// 1 / rate), so requests come in bursts and lulls as independent users'
// requests do, rather than in lock-step. Send times are fixed in advance of
// the answers: a slow server does not slow the arrivals down (no
// coordinated omission), and latency is counted from the scheduled time.
#ifndef FAVOR_CLIENT_LOADGEN_POISSON_ARRIVALS_H_
#define FAVOR_CLIENT_LOADGEN_POISSON_ARRIVALS_H_

#include <cstdint>

#include "absl/time/time.h"
#include "client/loadgen/random.h"

namespace favor::bench {

class PoissonArrivals {
 public:
  // `rate_per_second` > 0.
  PoissonArrivals(double rate_per_second, uint64_t seed);

  // The next arrival, as an offset from the start of the run; never earlier
  // than the one before.
  absl::Duration Next();

  double rate_per_second() const { return rate_per_second_; }

 private:
  double rate_per_second_;
  Random random_;
  double elapsed_seconds_ = 0;
};

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_POISSON_ARRIVALS_H_
