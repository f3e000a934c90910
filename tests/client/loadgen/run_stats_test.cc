#include "client/loadgen/run_stats.h"

#include "gtest/gtest.h"

namespace favor::bench {
namespace {

TEST(RunStatsTest, CountsOkCallsAndErrorsByCode) {
  RunStats stats;
  stats.Record(absl::StatusCode::kOk, 2, 100, absl::Milliseconds(10));
  stats.Record(absl::StatusCode::kOk, 3, 50, absl::Milliseconds(30));
  stats.Record(absl::StatusCode::kResourceExhausted, 2, 80,
               absl::Microseconds(5));
  stats.Record(absl::StatusCode::kResourceExhausted, 2, 80,
               absl::Microseconds(5));
  stats.Record(absl::StatusCode::kDeadlineExceeded, 1, 10, absl::Seconds(1));
  const RunTotals totals = stats.totals();
  EXPECT_EQ(totals.calls, 5);
  EXPECT_EQ(totals.ok_calls, 2);
  EXPECT_EQ(totals.sequences, 5);
  EXPECT_EQ(totals.tokens, 150);
  EXPECT_EQ(totals.errors.size(), 2u);
  EXPECT_EQ(totals.errors.at(absl::StatusCode::kResourceExhausted), 2);
  EXPECT_EQ(totals.errors.at(absl::StatusCode::kDeadlineExceeded), 1);
  // Only OK calls have latencies.
  const LatencySummary latency = stats.latency();
  EXPECT_EQ(latency.count, 2);
  EXPECT_EQ(latency.min, absl::Milliseconds(10));
  EXPECT_EQ(latency.max, absl::Milliseconds(30));
}

}  // namespace
}  // namespace favor::bench
