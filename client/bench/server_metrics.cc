#include "client/bench/server_metrics.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace favor::bench {
namespace {

struct HistogramDelta {
  double count = 0;
  double sum = 0;
  double mean() const { return count > 0 ? sum / count : 0; }
};

double Delta(const std::vector<PrometheusSample>& before,
             const std::vector<PrometheusSample>& after,
             const std::string& name, const LabelSet& match) {
  return SumSamples(after, name, match) - SumSamples(before, name, match);
}

HistogramDelta HistogramDeltaOf(const std::vector<PrometheusSample>& before,
                                const std::vector<PrometheusSample>& after,
                                const std::string& histogram,
                                const LabelSet& match) {
  HistogramDelta delta;
  delta.count = Delta(before, after, absl::StrCat(histogram, "_count"), match);
  delta.sum = Delta(before, after, absl::StrCat(histogram, "_sum"), match);
  return delta;
}

int64_t Count(double value) { return std::llround(value); }

}  // namespace

ServerMetricsDelta ComputeServerMetricsDelta(
    const std::vector<PrometheusSample>& before,
    const std::vector<PrometheusSample>& after, const std::string& model) {
  const LabelSet match = {{"model", model}};
  ServerMetricsDelta delta;
  const HistogramDelta queue =
      HistogramDeltaOf(before, after, kQueueDurationSeconds, match);
  delta.queued_inputs = Count(queue.count);
  delta.queue_seconds_total = queue.sum;
  delta.queue_seconds_mean = queue.mean();
  const HistogramDelta compute =
      HistogramDeltaOf(before, after, kComputeDurationSeconds, match);
  delta.batches = Count(compute.count);
  delta.compute_seconds_total = compute.sum;
  delta.compute_seconds_mean = compute.mean();
  delta.batch_size_mean =
      HistogramDeltaOf(before, after, kBatchSizeRequests, match).mean();
  const HistogramDelta requests =
      HistogramDeltaOf(before, after, kRequestDurationSeconds, match);
  delta.requests = Count(requests.count);
  delta.request_seconds_total = requests.sum;
  delta.request_seconds_mean = requests.mean();
  const HistogramDelta tokenization =
      HistogramDeltaOf(before, after, kTokenizationDurationSeconds, match);
  delta.tokenizations = Count(tokenization.count);
  delta.tokenization_seconds_total = tokenization.sum;
  delta.tokenization_seconds_mean = tokenization.mean();
  delta.tokenization_share =
      requests.sum > 0 ? tokenization.sum / requests.sum : 0;
  delta.tokens_processed =
      Count(Delta(before, after, kTokensProcessedTotal, match));
  return delta;
}

}  // namespace favor::bench
