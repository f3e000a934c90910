// The Metrics interface's own parts: the no-op implementation and the
// in-flight guard, whatever the implementation behind them.
#include "server/metrics/metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace favor::metrics {
namespace {

TEST(NoopMetricsTest, RecordsNothingAndServesNothing) {
  Metrics* metrics = Metrics::Noop();
  ASSERT_NE(metrics, nullptr);
  EXPECT_EQ(Metrics::Noop(), metrics);  // One shared instance.
  metrics->RecordRequest("bert", "Embed", absl::StatusCode::kOk,
                         absl::Milliseconds(1));
  metrics->RecordQueue("bert", absl::Milliseconds(1));
  metrics->RecordCompute("bert", absl::Milliseconds(1));
  metrics->RecordTokenization("bert", absl::Microseconds(50));
  metrics->RecordBatch("bert", 2, 20);
  metrics->RecordInputLength("bert", 10);
  metrics->AddQueueDepth("bert", 3);
  metrics->AddTokens("bert", 20);
  metrics->SetModelInfo({"bert", "v1", "favor+", "cpu", "float32"});
  { const Metrics::InFlightGuard guard = metrics->TrackInFlight("Embed"); }
  EXPECT_EQ(metrics->SerializeText(), "");
  EXPECT_EQ(metrics->port(), 0);
}

// Records only the in-flight calls: which keys were started and ended.
class InFlightLog final : public Metrics {
 public:
  int port() const override { return 0; }
  void RecordRequest(absl::string_view, absl::string_view, absl::StatusCode,
                     absl::Duration) override {}
  void RecordQueue(absl::string_view, absl::Duration) override {}
  void RecordCompute(absl::string_view, absl::Duration) override {}
  void RecordTokenization(absl::string_view, absl::Duration) override {}
  void RecordBatch(absl::string_view, int64_t, int64_t) override {}
  void RecordInputLength(absl::string_view, int64_t) override {}
  void AddQueueDepth(absl::string_view, int64_t) override {}
  void AddTokens(absl::string_view, int64_t) override {}
  void SetModelInfo(const ModelInfoLabels&) override {}
  std::string SerializeText() const override { return ""; }

  std::vector<std::string> started;
  std::vector<int> ended;

 private:
  int StartInFlight(absl::string_view method) override {
    started.emplace_back(method);
    return static_cast<int>(started.size());
  }
  void EndInFlight(int key) override { ended.push_back(key); }
};

TEST(MetricsTest, InFlightGuardEndsWhatItStartedExactlyOnce) {
  InFlightLog log;
  {
    Metrics::InFlightGuard first = log.TrackInFlight("Embed");
    {
      Metrics::InFlightGuard moved = std::move(first);
      const Metrics::InFlightGuard second = log.TrackInFlight("Attend");
      EXPECT_TRUE(log.ended.empty());
    }
    EXPECT_EQ(log.ended, (std::vector<int>{2, 1}));
  }  // `first`, moved from, ends nothing.
  EXPECT_EQ(log.started, (std::vector<std::string>{"Embed", "Attend"}));
  EXPECT_EQ(log.ended, (std::vector<int>{2, 1}));
}

}  // namespace
}  // namespace favor::metrics
