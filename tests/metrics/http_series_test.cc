// The HTTP families (server/metrics/http_series.h) through Metrics: bounded
// route and code labels, and every route's series there from the start.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/metric_names.h"
#include "server/metrics/metrics.h"
#include "tests/metrics/scrape.h"

namespace favor::metrics {
namespace {

using ::testing::Optional;

std::unique_ptr<Metrics> Offline() {
  Metrics::Options options;
  options.serve_http = false;
  auto metrics = Metrics::Create(options);
  EXPECT_TRUE(metrics.ok()) << metrics.status();
  return metrics.ok() ? std::move(*metrics) : nullptr;
}

TEST(HttpSeriesTest, CountsByRouteAndCodeWithBoundedLabels) {
  std::unique_ptr<Metrics> metrics = Offline();
  ASSERT_NE(metrics, nullptr);
  const std::string total(kHttpRequestsTotal);
  std::string text = metrics->SerializeText();
  for (absl::string_view route : kHttpRoutes) {  // at zero from the start
    EXPECT_THAT(
        scrape::FindSample(text, total,
                           {{"route", std::string(route)}, {"code", "200"}}),
        Optional(0.0))
        << route;
  }
  metrics->RecordHttpRequest("/v1/embeddings", 200, absl::Milliseconds(3));
  metrics->RecordHttpRequest("/v1/embeddings", 429, absl::Milliseconds(1));
  metrics->RecordHttpRequest("/v1/embeddings/../etc", 404,
                             absl::ZeroDuration());
  metrics->RecordHttpRequest("/health", 418, absl::ZeroDuration());
  text = metrics->SerializeText();
  EXPECT_THAT(scrape::FindSample(
                  text, total, {{"route", "/v1/embeddings"}, {"code", "200"}}),
              Optional(1.0));
  EXPECT_THAT(scrape::FindSample(
                  text, total, {{"route", "/v1/embeddings"}, {"code", "429"}}),
              Optional(1.0));
  EXPECT_THAT(
      scrape::FindSample(text, total, {{"route", "(other)"}, {"code", "404"}}),
      Optional(1.0));
  EXPECT_THAT(scrape::FindSample(text, total,
                                 {{"route", "/health"}, {"code", "(other)"}}),
              Optional(1.0));
  EXPECT_THAT(scrape::FindSample(
                  text, std::string(kHttpRequestDurationSeconds) + "_count",
                  {{"route", "/v1/embeddings"}}),
              Optional(2.0));
}

TEST(HttpSeriesTest, TheNoopRecordsNothing) {
  Metrics::Noop()->RecordHttpRequest("/health", 200, absl::ZeroDuration());
  EXPECT_EQ(Metrics::Noop()->SerializeText(), "");
}

}  // namespace
}  // namespace favor::metrics
