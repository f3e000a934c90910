// The HTTP families of PrometheusMetrics (internal to favor_metrics, whose
// sources alone see prometheus-cpp's headers):
// favor_http_requests_total{route, code} and
// favor_http_request_duration_seconds{route}. Labels are bounded by
// metric_names.h's kHttpRoutes and kHttpCodes, plus "(other)". The duration
// of every route and its code-200 count exist from the start, at zero (so
// that rate() counts first requests); other codes are created the first
// time they occur and then kept.
#ifndef FAVOR_SERVER_METRICS_HTTP_SERIES_H_
#define FAVOR_SERVER_METRICS_HTTP_SERIES_H_

#include <atomic>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace favor::metrics {

class HttpSeries {
 public:
  // Registers the families; prometheus-cpp throws on failure (the caller
  // turns that into a Status).
  explicit HttpSeries(prometheus::Registry& registry);
  ~HttpSeries();

  void Record(absl::string_view route, int status_code,
              absl::Duration duration);

 private:
  static int RouteIndex(absl::string_view route);
  static int CodeIndex(int status_code);
  prometheus::Counter* CountOf(int route, int code);

  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* durations_family_;
  std::vector<prometheus::Histogram*> durations_;  // by route index
  // By route index * (codes + 1) + code index; null until first used.
  std::unique_ptr<std::atomic<prometheus::Counter*>[]> counts_;
};

}  // namespace favor::metrics

#endif  // FAVOR_SERVER_METRICS_HTTP_SERIES_H_
