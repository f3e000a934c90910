// favor-bench's load: Embed calls on a favor::Client, closed or open loop,
// unary or streaming, with a warm-up that is not counted, bounded by time or
// by a number of calls.
//
// Closed loop (request_rate_per_second == 0): `concurrency` callers, each
// sending one call and waiting for its answer before sending the next; the
// server always has `concurrency` calls to work on. Unary: one thread per
// caller, blocking Embed. Streaming: one EmbedStream with `concurrency`
// messages in flight.
//
// Open loop (request_rate_per_second > 0): calls are sent at the times of a
// Poisson process of that rate, whatever the answers do, and each call's
// latency counts from its scheduled time, so a server (or client) that
// falls behind shows in the latencies instead of slowing the load down
// (no coordinated omission). Unary: EmbedAsync; streaming: one stream
// without a cap on messages in flight beyond the server's flow control.
//
// Phases: first a warm-up of its own, `warmup` long, whose calls are
// answered but not counted, and whose last answers come in before the
// measured phase starts (so that no warm-up work runs on the server in
// the measured time); then calls are counted until `duration` has passed or
// `request_count` calls have been sent (whichever comes first; 0 disables
// a bound, not both), and the run waits for their answers. The measured
// time runs from the start of the measured phase to the last counted
// answer.
//
// Inputs: each call carries `inputs_per_call` inputs whose lengths are
// drawn from `lengths`: token ids uniform in [0, vocab_size) or, with a
// `corpus`, texts of that many tokens cut from it (text_corpus.h), from
// `seed` (the same seed sends the same calls). The caller keeps lengths
// within the model's limits (LengthDistribution::CappedAt).
#ifndef FAVOR_CLIENT_LOADGEN_LOAD_GENERATOR_H_
#define FAVOR_CLIENT_LOADGEN_LOAD_GENERATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/loadgen/latency_recorder.h"
#include "client/loadgen/length_distribution.h"
#include "client/loadgen/run_stats.h"
#include "client/loadgen/text_corpus.h"
#include "favor/client.h"

namespace favor::bench {

struct LoadOptions {
  // Closed-loop callers (at least 1); ignored in open loop.
  int concurrency = 1;
  // Open loop at this many calls per second when > 0; closed loop at 0.
  double request_rate_per_second = 0;
  // Lengths of the inputs, in tokens.
  LengthDistribution lengths = LengthDistribution::Fixed(128);
  // Inputs per call (at least 1).
  int inputs_per_call = 1;
  // EmbedStream rather than unary Embed.
  bool streaming = false;
  // Bounds of the measured phase; at least one must be set (> 0).
  absl::Duration duration = absl::Seconds(10);
  int64_t request_count = 0;
  // Length of the warm-up phase, whose calls are not counted.
  absl::Duration warmup = absl::Seconds(1);
  // Token ids are drawn uniformly in [0, vocab_size); at least 1.
  int64_t vocab_size = 1;
  // When set, inputs are texts cut from it instead of token ids.
  std::shared_ptr<const TextCorpus> corpus;
  // The model; empty: the server's default.
  std::string model;
  // Deadline of each call (or stream message), from its sending.
  absl::Duration call_timeout = absl::Seconds(60);
  // Seed of lengths, token ids and arrival times.
  uint64_t seed = 1;
};

struct LoadResult {
  RunTotals totals;              // counted calls only
  LatencySummary latency;        // of the counted OK calls
  absl::Duration measured_time;  // measured phase's start to its last answer
  int64_t warmup_calls = 0;      // calls sent during the warm-up
};

// OK, or INVALID_ARGUMENT naming the first bad option.
absl::Status ValidateLoadOptions(const LoadOptions& options);

// Runs the load on `client` (not owned; thread-safe by contract).
// INVALID_ARGUMENT for bad options; a stream that cannot be opened fails the
// run; failed calls are counted by code, not returned.
absl::StatusOr<LoadResult> RunLoad(Client* client, const LoadOptions& options);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_LOAD_GENERATOR_H_
