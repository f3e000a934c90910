// The client-side tally of a load run: calls by status code, the sequences
// and tokens of the successful ones, and their latencies. Thread-safe.
#ifndef FAVOR_CLIENT_LOADGEN_RUN_STATS_H_
#define FAVOR_CLIENT_LOADGEN_RUN_STATS_H_

#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/loadgen/latency_recorder.h"

namespace favor::bench {

struct RunTotals {
  // Calls answered, OK or not.
  int64_t calls = 0;
  // Calls answered OK, and their inputs (sequences) and tokens.
  int64_t ok_calls = 0;
  int64_t sequences = 0;
  int64_t tokens = 0;
  // Failed calls by code (never absl::StatusCode::kOk).
  std::map<absl::StatusCode, int64_t> errors;
};

class RunStats {
 public:
  // One answered call: its code, how many inputs and tokens it carried,
  // and how long it took. Only OK calls count towards the latencies, the
  // sequences and the tokens (a refusal is fast and would flatter them).
  void Record(absl::StatusCode code, int64_t sequences, int64_t tokens,
              absl::Duration latency) ABSL_LOCKS_EXCLUDED(mu_);

  RunTotals totals() const ABSL_LOCKS_EXCLUDED(mu_);
  LatencySummary latency() const { return latencies_.Summarize(); }

 private:
  mutable absl::Mutex mu_;
  RunTotals totals_ ABSL_GUARDED_BY(mu_);
  LatencyRecorder latencies_;
};

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_RUN_STATS_H_
