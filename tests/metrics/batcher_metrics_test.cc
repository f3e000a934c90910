#include "server/metrics/batcher_metrics.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/batching/request.h"
#include "server/metrics/metric_names.h"
#include "server/metrics/metrics.h"
#include "tests/metrics/scrape.h"

namespace favor::metrics {
namespace {

using scrape::FindSample;
using ::testing::Optional;

std::string Name(absl::string_view name, absl::string_view suffix = "") {
  return absl::StrCat(name, suffix);
}

class BatcherMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Metrics::Options options;
    options.serve_http = false;
    options.models = {"bert"};
    absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Create(options);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = std::move(*metrics);
  }

  std::unique_ptr<Metrics> metrics_;
};

TEST_F(BatcherMetricsTest, DequeuedRequestsRecordTheirQueueDuration) {
  BatcherMetrics observer(metrics_.get(), "bert");
  batching::Request request([](const absl::Status&) {});
  request.num_tokens = 12;
  observer.OnDequeued(request, absl::Milliseconds(3), absl::StatusCode::kOk);
  observer.OnDequeued(request, absl::Seconds(2),
                      absl::StatusCode::kDeadlineExceeded);
  request.Complete(absl::OkStatus());

  const std::string text = metrics_->SerializeText();
  const scrape::LabelSet bert{{"model", "bert"}};
  EXPECT_THAT(FindSample(text, Name(kQueueDurationSeconds, "_count"), bert),
              Optional(2.0));
  const std::optional<double> sum =
      FindSample(text, Name(kQueueDurationSeconds, "_sum"), bert);
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, 2.003, 1e-9);
}

// favor_queue_depth goes up by one as a request is queued and down by one as
// it leaves, whatever the reason; two observers of one model (two versions
// during a reload) add up.
TEST_F(BatcherMetricsTest, QueueDepthCountsRequestsInMinusOut) {
  BatcherMetrics observer(metrics_.get(), "bert");
  BatcherMetrics next_version(metrics_.get(), "bert");
  batching::Request request([](const absl::Status&) {});
  request.num_tokens = 12;
  const scrape::LabelSet bert{{"model", "bert"}};
  const auto depth = [&] {
    return FindSample(metrics_->SerializeText(), Name(kQueueDepth), bert);
  };
  for (int i = 0; i < 3; ++i) observer.OnEnqueued(request);
  next_version.OnEnqueued(request);
  EXPECT_THAT(depth(), Optional(4.0));
  observer.OnDequeued(request, absl::Milliseconds(3), absl::StatusCode::kOk);
  observer.OnDequeued(request, absl::Seconds(2),
                      absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(depth(), Optional(2.0));
  observer.OnDequeued(request, absl::Seconds(2), absl::StatusCode::kCancelled);
  next_version.OnDequeued(request, absl::Seconds(1), absl::StatusCode::kOk);
  EXPECT_THAT(depth(), Optional(0.0));
  request.Complete(absl::OkStatus());
}

TEST_F(BatcherMetricsTest, BatchesRecordSizeComputeAndSuccessfulTokens) {
  BatcherMetrics observer(metrics_.get(), "bert");
  observer.OnBatchRun(0, 3, 96, absl::Milliseconds(5), absl::OkStatus());
  observer.OnBatchRun(1, 1, 40, absl::Milliseconds(1),
                      absl::InternalError("device lost"));

  const std::string text = metrics_->SerializeText();
  const scrape::LabelSet bert{{"model", "bert"}};
  EXPECT_THAT(FindSample(text, Name(kComputeDurationSeconds, "_count"), bert),
              Optional(2.0));
  EXPECT_THAT(FindSample(text, Name(kBatchSizeRequests, "_sum"), bert),
              Optional(4.0));
  EXPECT_THAT(FindSample(text, Name(kBatchSizeTokens, "_sum"), bert),
              Optional(136.0));
  // Only the batch that succeeded processed its tokens.
  EXPECT_THAT(FindSample(text, Name(kTokensProcessedTotal), bert),
              Optional(96.0));
}

}  // namespace
}  // namespace favor::metrics
