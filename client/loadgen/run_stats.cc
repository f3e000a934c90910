#include "client/loadgen/run_stats.h"

namespace favor::bench {

void RunStats::Record(absl::StatusCode code, int64_t sequences, int64_t tokens,
                      absl::Duration latency) {
  if (code == absl::StatusCode::kOk) latencies_.Record(latency);
  absl::MutexLock lock(&mu_);
  ++totals_.calls;
  if (code != absl::StatusCode::kOk) {
    ++totals_.errors[code];
    return;
  }
  ++totals_.ok_calls;
  totals_.sequences += sequences;
  totals_.tokens += tokens;
}

RunTotals RunStats::totals() const {
  absl::MutexLock lock(&mu_);
  return totals_;
}

}  // namespace favor::bench
