#include "client/loadgen/prometheus_text.h"

#include <cmath>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::bench {
namespace {

using ::testing::HasSubstr;

// As prometheus-cpp serialises favor-server's families.
constexpr char kExposition[] =
    R"txt(# HELP favor_queue_duration_seconds Time in the queue
# TYPE favor_queue_duration_seconds histogram
favor_queue_duration_seconds_count{model="default"} 12
favor_queue_duration_seconds_sum{model="default"} 0.0375
favor_queue_duration_seconds_bucket{model="default",le="0.0001"} 2
favor_queue_duration_seconds_bucket{model="default",le="+Inf"} 12
favor_queue_duration_seconds_count{model="small"} 3
favor_queue_duration_seconds_sum{model="small"} 1.5e-3
# TYPE favor_requests_total counter
favor_requests_total{code="OK",method="Embed",model="default"} 10
favor_requests_total{code="INVALID_ARGUMENT",method="Embed",model="default"} 2
favor_requests_total{code="OK",method="Attend",model="(none)"} 4
favor_queue_depth{model="default"} 0 1700000000000
odd_labels{a="x\"y",b="back\\slash",c="line\nbreak",} NaN
no_labels -Inf
)txt";

TEST(PrometheusTextTest, ParsesNamesLabelsAndValues) {
  auto samples = ParsePrometheusText(kExposition);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 12u);
  const PrometheusSample& first = (*samples)[0];
  EXPECT_EQ(first.name, "favor_queue_duration_seconds_count");
  EXPECT_EQ(first.labels, (LabelSet{{"model", "default"}}));
  EXPECT_EQ(first.value, 12);
  EXPECT_EQ((*samples)[3].labels.at("le"), "+Inf");
  EXPECT_DOUBLE_EQ((*samples)[5].value, 1.5e-3);
  // A timestamp is ignored.
  EXPECT_EQ((*samples)[9].name, "favor_queue_depth");
  EXPECT_EQ((*samples)[9].value, 0);
  const PrometheusSample& odd = (*samples)[10];
  EXPECT_EQ(odd.labels.at("a"), "x\"y");
  EXPECT_EQ(odd.labels.at("b"), "back\\slash");
  EXPECT_EQ(odd.labels.at("c"), "line\nbreak");
  EXPECT_TRUE(std::isnan(odd.value));
  EXPECT_TRUE((*samples)[11].labels.empty());
  EXPECT_EQ((*samples)[11].value, -INFINITY);
}

TEST(PrometheusTextTest, SumsSamplesMatchingSomeLabels) {
  auto samples = ParsePrometheusText(kExposition);
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ(SumSamples(*samples, "favor_requests_total", {}), 16);
  EXPECT_EQ(
      SumSamples(*samples, "favor_requests_total", {{"model", "default"}}), 12);
  EXPECT_EQ(SumSamples(*samples, "favor_requests_total",
                       {{"model", "default"}, {"code", "OK"}}),
            10);
  EXPECT_DOUBLE_EQ(SumSamples(*samples, "favor_queue_duration_seconds_sum",
                              {{"model", "default"}}),
                   0.0375);
  EXPECT_EQ(SumSamples(*samples, "favor_requests_total", {{"model", "absent"}}),
            0);
  EXPECT_EQ(SumSamples(*samples, "no_such_metric", {}), 0);
}

TEST(PrometheusTextTest, MalformedLinesAreDataLossNamingTheLine) {
  for (const char* text :
       {"metric{a=\"x\"", "metric{a=x} 1", "metric 1 2 3", "metric abc",
        "metric{a=\"unterminated} 1", "{a=\"x\"} 1", "metric"}) {
    auto samples = ParsePrometheusText(std::string("ok 1\n") + text + "\n");
    EXPECT_EQ(samples.status().code(), absl::StatusCode::kDataLoss) << text;
    EXPECT_THAT(samples.status().message(), HasSubstr("line 2")) << text;
  }
}

TEST(PrometheusTextTest, EmptyAndCommentsOnly) {
  auto samples = ParsePrometheusText("\n# HELP x y\n\n");
  ASSERT_TRUE(samples.ok());
  EXPECT_TRUE(samples->empty());
}

}  // namespace
}  // namespace favor::bench
