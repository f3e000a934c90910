// Latencies of a run, kept one by one so that percentiles are exact (a run
// of a few hundred thousand calls costs a few MB) rather than estimated from
// buckets. Thread-safe: callers record from any thread.
#ifndef FAVOR_CLIENT_LOADGEN_LATENCY_RECORDER_H_
#define FAVOR_CLIENT_LOADGEN_LATENCY_RECORDER_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace favor::bench {

// What a set of latencies looks like. Percentiles use the nearest-rank
// definition: pN is the smallest recorded latency that at least N% of the
// latencies do not exceed, so every reported value was actually observed.
// All zero when nothing was recorded.
struct LatencySummary {
  int64_t count = 0;
  absl::Duration min;
  absl::Duration mean;
  absl::Duration p50;
  absl::Duration p90;
  absl::Duration p99;
  absl::Duration p99_9;
  absl::Duration max;
};

class LatencyRecorder {
 public:
  void Record(absl::Duration latency) ABSL_LOCKS_EXCLUDED(mu_);

  int64_t count() const ABSL_LOCKS_EXCLUDED(mu_);
  LatencySummary Summarize() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::vector<int64_t> nanos_ ABSL_GUARDED_BY(mu_);
};

// The nearest-rank `percent` percentile (0 < percent <= 100) of `sorted`
// (ascending, not empty).
int64_t NearestRankPercentile(const std::vector<int64_t>& sorted,
                              double percent);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_LATENCY_RECORDER_H_
