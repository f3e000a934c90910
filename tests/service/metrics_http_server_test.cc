// MetricsHttpServer in front of a serving FavorService: a scrape of
// /metrics over HTTP on loopback has every family and the calls just made.
#include "server/service/metrics_http_server.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "server/metrics/metric_names.h"
#include "tests/metrics/scrape.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::service {
namespace {

TEST_F(FakeServiceTest, MetricsScrapeHasEveryFamily) {
  Start();
  auto http =
      MetricsHttpServer::Create({"127.0.0.1", 0, 5000}, &server_->metrics());
  ASSERT_TRUE(http.ok()) << http.status();
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1, 2}})).ok());
  ASSERT_TRUE(CallAttend(server_->stub(), UniformAttend("softmax")).ok());
  server_->metrics().SetModelInfo(
      {"fake", "fake-1", "favor+", "cpu", "float32"});
  auto scraped = metrics::scrape::HttpGet((*http)->port(), "/metrics");
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_EQ(scraped->status_code, 200);
  for (absl::string_view family :
       {metrics::kRequestDurationSeconds, metrics::kQueueDurationSeconds,
        metrics::kComputeDurationSeconds, metrics::kBatchSizeRequests,
        metrics::kBatchSizeTokens, metrics::kInputLengthTokens,
        metrics::kQueueDepth, metrics::kRequestsInFlight, metrics::kModelInfo,
        metrics::kRequestsTotal, metrics::kTokensProcessedTotal}) {
    EXPECT_NE(scraped->body.find(absl::StrCat("# TYPE ", family, " ")),
              std::string::npos)
        << family;
  }
  EXPECT_EQ(metrics::scrape::FindSample(
                scraped->body, metrics::kRequestsTotal,
                {{"model", "fake"}, {"method", "Embed"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(metrics::scrape::FindSample(
                scraped->body, metrics::kRequestsTotal,
                {{"model", "(none)"}, {"method", "Attend"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(
      metrics::scrape::FindSample(scraped->body, metrics::kTokensProcessedTotal,
                                  {{"model", "fake"}}),
      2);
  auto missing = metrics::scrape::HttpGet((*http)->port(), "/other");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status_code, 404);
}

}  // namespace
}  // namespace favor::service
