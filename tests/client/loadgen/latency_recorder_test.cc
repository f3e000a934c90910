#include "client/loadgen/latency_recorder.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace favor::bench {
namespace {

TEST(LatencyRecorderTest, NearestRankPercentilesOfOneToHundred) {
  LatencyRecorder recorder;
  // Recorded out of order: the summary sorts.
  for (int i = 100; i >= 1; --i) recorder.Record(absl::Milliseconds(i));
  const LatencySummary summary = recorder.Summarize();
  EXPECT_EQ(summary.count, 100);
  EXPECT_EQ(summary.min, absl::Milliseconds(1));
  EXPECT_EQ(summary.max, absl::Milliseconds(100));
  EXPECT_EQ(summary.mean, absl::Microseconds(50500));
  EXPECT_EQ(summary.p50, absl::Milliseconds(50));
  EXPECT_EQ(summary.p90, absl::Milliseconds(90));
  EXPECT_EQ(summary.p99, absl::Milliseconds(99));
  EXPECT_EQ(summary.p99_9, absl::Milliseconds(100));
}

TEST(LatencyRecorderTest, PercentilesAreObservedValues) {
  const std::vector<int64_t> sorted = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(NearestRankPercentile(sorted, 50), 50);
  EXPECT_EQ(NearestRankPercentile(sorted, 90), 90);  // not 100
  EXPECT_EQ(NearestRankPercentile(sorted, 91), 100);
  EXPECT_EQ(NearestRankPercentile(sorted, 99.9), 100);
  EXPECT_EQ(NearestRankPercentile(sorted, 100), 100);
  EXPECT_EQ(NearestRankPercentile(sorted, 0.001), 10);
  EXPECT_EQ(NearestRankPercentile({7}, 50), 7);
}

TEST(LatencyRecorderTest, ThousandValuesP999IsTheSecondLargest) {
  LatencyRecorder recorder;
  for (int i = 1; i <= 1000; ++i) recorder.Record(absl::Microseconds(i));
  const LatencySummary summary = recorder.Summarize();
  EXPECT_EQ(summary.p99_9, absl::Microseconds(999));
  EXPECT_EQ(summary.p99, absl::Microseconds(990));
}

TEST(LatencyRecorderTest, EmptyIsAllZero) {
  const LatencySummary summary = LatencyRecorder().Summarize();
  EXPECT_EQ(summary.count, 0);
  EXPECT_EQ(summary.p99, absl::ZeroDuration());
  EXPECT_EQ(summary.max, absl::ZeroDuration());
}

TEST(LatencyRecorderTest, RecordsFromManyThreads) {
  LatencyRecorder recorder;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&recorder, t] {
      for (int i = 0; i < 1000; ++i) {
        recorder.Record(absl::Nanoseconds(t * 1000 + i + 1));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const LatencySummary summary = recorder.Summarize();
  EXPECT_EQ(summary.count, 8000);
  EXPECT_EQ(summary.min, absl::Nanoseconds(1));
  EXPECT_EQ(summary.max, absl::Nanoseconds(8000));
  EXPECT_EQ(summary.p50, absl::Nanoseconds(4000));
}

}  // namespace
}  // namespace favor::bench
