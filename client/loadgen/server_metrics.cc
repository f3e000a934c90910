#include "client/loadgen/server_metrics.h"

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
  const auto histogram = [&](const char* name, int64_t* count, double* total,
                             double* mean) {
    const HistogramDelta histogram_delta =
        HistogramDeltaOf(before, after, name, match);
    *count = Count(histogram_delta.count);
    *total = histogram_delta.sum;
    *mean = histogram_delta.mean();
  };
  histogram(kQueueDurationSeconds, &delta.queued_inputs,
            &delta.queue_seconds_total, &delta.queue_seconds_mean);
  histogram(kComputeDurationSeconds, &delta.batches,
            &delta.compute_seconds_total, &delta.compute_seconds_mean);
  histogram(kRequestDurationSeconds, &delta.requests,
            &delta.request_seconds_total, &delta.request_seconds_mean);
  histogram(kTokenizationDurationSeconds, &delta.tokenizations,
            &delta.tokenization_seconds_total,
            &delta.tokenization_seconds_mean);
  delta.batch_size_mean =
      HistogramDeltaOf(before, after, kBatchSizeRequests, match).mean();
  delta.tokenization_share =
      delta.request_seconds_total > 0
          ? delta.tokenization_seconds_total / delta.request_seconds_total
          : 0;
  delta.tokens_processed =
      Count(Delta(before, after, kTokensProcessedTotal, match));
  return delta;
}

}  // namespace favor::bench
