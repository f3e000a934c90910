#include "client/loadgen/latency_recorder.h"

#include <algorithm>
#include <cmath>

namespace favor::bench {

int64_t NearestRankPercentile(const std::vector<int64_t>& sorted,
                              double percent) {
  const double n = static_cast<double>(sorted.size());
  // The rank is computed in integer-friendly steps so that, say, p90 of 10
  // values is the 9th and not the 10th because of 0.9 * 10 = 9.000000002.
  double rank = std::ceil(percent * n / 100.0 - 1e-9);
  rank = std::min(std::max(rank, 1.0), n);
  return sorted[static_cast<size_t>(rank) - 1];
}

void LatencyRecorder::Record(absl::Duration latency) {
  const int64_t nanos = absl::ToInt64Nanoseconds(latency);
  absl::MutexLock lock(&mu_);
  nanos_.push_back(nanos);
}

int64_t LatencyRecorder::count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(nanos_.size());
}

LatencySummary LatencyRecorder::Summarize() const {
  std::vector<int64_t> sorted;
  {
    absl::MutexLock lock(&mu_);
    sorted = nanos_;
  }
  LatencySummary summary;
  if (sorted.empty()) return summary;
  std::sort(sorted.begin(), sorted.end());
  // Summed in long double, which no run's total can overflow.
  long double total = 0;
  for (int64_t nanos : sorted) total += nanos;
  summary.count = static_cast<int64_t>(sorted.size());
  summary.min = absl::Nanoseconds(sorted.front());
  summary.max = absl::Nanoseconds(sorted.back());
  summary.mean = absl::Nanoseconds(
      static_cast<int64_t>(std::llround(total / sorted.size())));
  summary.p50 = absl::Nanoseconds(NearestRankPercentile(sorted, 50));
  summary.p90 = absl::Nanoseconds(NearestRankPercentile(sorted, 90));
  summary.p99 = absl::Nanoseconds(NearestRankPercentile(sorted, 99));
  summary.p99_9 = absl::Nanoseconds(NearestRankPercentile(sorted, 99.9));
  return summary;
}

}  // namespace favor::bench
