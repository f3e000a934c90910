// favor-bench's report of a run in which no call succeeded: no latency was
// measured, so none is printed ("p50 0.000 ... max 0.000" would read as a
// measurement).
#include "client/loadgen/report.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

BenchReport EveryCallFailed() {
  BenchReport report;
  report.model = "m";
  report.options.vocab_size = 10;
  report.result.totals.calls = 3;
  report.result.totals.errors[absl::StatusCode::kDeadlineExceeded] = 3;
  report.result.measured_time = absl::Seconds(1);
  return report;
}

TEST(ReportTest, NoSuccessfulCallHasNoLatencies) {
  const nlohmann::json json = ReportToJson(EveryCallFailed());
  const nlohmann::json& latency = json["latency_ms"];
  EXPECT_EQ(latency["count"], 0);
  for (const char* key : {"min", "mean", "p50", "p90", "p99", "p99_9", "max"}) {
    EXPECT_TRUE(latency[key].is_null()) << key << ": " << latency;
  }
  const std::string text = ReportToText(EveryCallFailed());
  EXPECT_THAT(text, HasSubstr("latency (ms): none (no call succeeded)"));
  EXPECT_THAT(text, Not(HasSubstr("p50")));
  EXPECT_THAT(text, HasSubstr("errors DEADLINE_EXCEEDED: 3"));
}

TEST(ReportTest, MeasuredLatenciesArePrinted) {
  BenchReport report = EveryCallFailed();
  report.result.totals.ok_calls = 1;
  report.result.latency.count = 1;
  report.result.latency.p50 = absl::Milliseconds(12.5);
  EXPECT_EQ(ReportToJson(report)["latency_ms"]["p50"], 12.5);
  EXPECT_THAT(ReportToText(report), HasSubstr("p50 12.500"));
}

}  // namespace
}  // namespace favor::bench
