// What the server says about a run: the difference between two scrapes of
// its /metrics, taken before and after, for the model the run used. The
// histograms' _sum and _count deltas give the run's total and mean queue,
// compute and tokenisation time; other traffic to the same model during the run
// is counted too (the server cannot tell it apart).
#ifndef FAVOR_CLIENT_LOADGEN_SERVER_METRICS_H_
#define FAVOR_CLIENT_LOADGEN_SERVER_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "client/loadgen/prometheus_text.h"

namespace favor::bench {

// The metric names favor-server exports (server/metrics/metric_names.h,
// repeated here because a client tool does not depend on the server).
inline constexpr char kQueueDurationSeconds[] = "favor_queue_duration_seconds";
inline constexpr char kComputeDurationSeconds[] =
    "favor_compute_duration_seconds";
inline constexpr char kRequestDurationSeconds[] =
    "favor_request_duration_seconds";
inline constexpr char kBatchSizeRequests[] = "favor_batch_size_requests";
inline constexpr char kTokensProcessedTotal[] = "favor_tokens_processed_total";
inline constexpr char kTokenizationDurationSeconds[] =
    "favor_tokenization_duration_seconds";

// Deltas over the run, for one model; means are 0 when their count is.
struct ServerMetricsDelta {
  // Inputs that left the queue for a batch, their total and mean wait.
  int64_t queued_inputs = 0;
  double queue_seconds_total = 0;
  double queue_seconds_mean = 0;
  // Batches computed, their total and mean compute time, and their mean
  // size in inputs.
  int64_t batches = 0;
  double compute_seconds_total = 0;
  double compute_seconds_mean = 0;
  double batch_size_mean = 0;
  // Calls answered (every method and code) and their mean duration on the
  // server.
  int64_t requests = 0;
  double request_seconds_total = 0;
  double request_seconds_mean = 0;
  // Calls whose texts were tokenised (one per call or stream message with
  // text), their total and mean tokenisation time, and that total's share
  // of the calls' time on the server (0 without calls).
  int64_t tokenizations = 0;
  double tokenization_seconds_total = 0;
  double tokenization_seconds_mean = 0;
  double tokenization_share = 0;
  // Tokens computed in successful batches.
  int64_t tokens_processed = 0;
};

ServerMetricsDelta ComputeServerMetricsDelta(
    const std::vector<PrometheusSample>& before,
    const std::vector<PrometheusSample>& after, const std::string& model);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_SERVER_METRICS_H_
