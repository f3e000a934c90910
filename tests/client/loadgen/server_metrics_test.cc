#include "client/loadgen/server_metrics.h"

#include "gtest/gtest.h"

namespace favor::bench {
namespace {

std::vector<PrometheusSample> Parse(const std::string& text) {
  auto samples = ParsePrometheusText(text);
  EXPECT_TRUE(samples.ok()) << samples.status();
  return samples.ok() ? *samples : std::vector<PrometheusSample>();
}

TEST(ServerMetricsTest, DeltasOfOneModelOverTheRun) {
  const auto before = Parse(R"(
favor_queue_duration_seconds_count{model="m"} 10
favor_queue_duration_seconds_sum{model="m"} 1.0
favor_compute_duration_seconds_count{model="m"} 5
favor_compute_duration_seconds_sum{model="m"} 2.0
favor_batch_size_requests_count{model="m"} 5
favor_batch_size_requests_sum{model="m"} 10
favor_request_duration_seconds_count{code="OK",method="Embed",model="m"} 10
favor_request_duration_seconds_sum{code="OK",method="Embed",model="m"} 4
favor_tokens_processed_total{model="m"} 1000
favor_queue_duration_seconds_count{model="other"} 99
favor_queue_duration_seconds_sum{model="other"} 99
)");
  const auto after = Parse(R"(
favor_queue_duration_seconds_count{model="m"} 30
favor_queue_duration_seconds_sum{model="m"} 1.5
favor_compute_duration_seconds_count{model="m"} 10
favor_compute_duration_seconds_sum{model="m"} 3.0
favor_batch_size_requests_count{model="m"} 10
favor_batch_size_requests_sum{model="m"} 30
favor_request_duration_seconds_count{code="OK",method="Embed",model="m"} 28
favor_request_duration_seconds_sum{code="OK",method="Embed",model="m"} 5.8
favor_request_duration_seconds_count{code="INVALID_ARGUMENT",method="Embed",model="m"} 2
favor_request_duration_seconds_sum{code="INVALID_ARGUMENT",method="Embed",model="m"} 0.2
favor_tokens_processed_total{model="m"} 6120
favor_queue_duration_seconds_count{model="other"} 500
favor_queue_duration_seconds_sum{model="other"} 500
)");
  const ServerMetricsDelta delta =
      ComputeServerMetricsDelta(before, after, "m");
  EXPECT_EQ(delta.queued_inputs, 20);
  EXPECT_DOUBLE_EQ(delta.queue_seconds_total, 0.5);
  EXPECT_DOUBLE_EQ(delta.queue_seconds_mean, 0.025);
  EXPECT_EQ(delta.batches, 5);
  EXPECT_DOUBLE_EQ(delta.compute_seconds_total, 1.0);
  EXPECT_DOUBLE_EQ(delta.compute_seconds_mean, 0.2);
  EXPECT_DOUBLE_EQ(delta.batch_size_mean, 4.0);
  EXPECT_EQ(delta.requests, 20);
  EXPECT_DOUBLE_EQ(delta.request_seconds_mean, 0.1);
  EXPECT_EQ(delta.tokens_processed, 5120);
}

TEST(ServerMetricsTest, TokenizationTimeAndItsShareOfTheCallsTime) {
  const auto before = Parse(R"(
favor_request_duration_seconds_count{code="OK",method="Embed",model="m"} 10
favor_request_duration_seconds_sum{code="OK",method="Embed",model="m"} 4
favor_tokenization_duration_seconds_count{model="m"} 10
favor_tokenization_duration_seconds_sum{model="m"} 0.1
favor_tokenization_duration_seconds_count{model="other"} 7
favor_tokenization_duration_seconds_sum{model="other"} 7
)");
  const auto after = Parse(R"(
favor_request_duration_seconds_count{code="OK",method="Embed",model="m"} 30
favor_request_duration_seconds_sum{code="OK",method="Embed",model="m"} 12
favor_tokenization_duration_seconds_count{model="m"} 30
favor_tokenization_duration_seconds_sum{model="m"} 0.5
favor_tokenization_duration_seconds_count{model="other"} 70
favor_tokenization_duration_seconds_sum{model="other"} 70
)");
  const ServerMetricsDelta delta =
      ComputeServerMetricsDelta(before, after, "m");
  EXPECT_EQ(delta.tokenizations, 20);
  EXPECT_DOUBLE_EQ(delta.tokenization_seconds_total, 0.4);
  EXPECT_DOUBLE_EQ(delta.tokenization_seconds_mean, 0.02);
  EXPECT_DOUBLE_EQ(delta.request_seconds_total, 8);
  EXPECT_DOUBLE_EQ(delta.tokenization_share, 0.05);
}

TEST(ServerMetricsTest, NoTrafficGivesZeroMeans) {
  const auto samples = Parse(R"(
favor_queue_duration_seconds_count{model="m"} 10
favor_queue_duration_seconds_sum{model="m"} 1.0
)");
  const ServerMetricsDelta delta =
      ComputeServerMetricsDelta(samples, samples, "m");
  EXPECT_EQ(delta.queued_inputs, 0);
  EXPECT_EQ(delta.queue_seconds_mean, 0);
  EXPECT_EQ(delta.batches, 0);
  EXPECT_EQ(delta.compute_seconds_mean, 0);
  EXPECT_EQ(delta.tokenization_seconds_mean, 0);
  EXPECT_EQ(delta.tokenization_share, 0);
}

}  // namespace
}  // namespace favor::bench
