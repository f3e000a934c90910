#include "server/metrics/http_series.h"

#include <iterator>
#include <string>

#include "server/metrics/buckets.h"
#include "server/metrics/metric_names.h"

namespace favor::metrics {
namespace {

constexpr int kNumRoutes = static_cast<int>(std::size(kHttpRoutes)) + 1;
constexpr int kNumCodes = static_cast<int>(std::size(kHttpCodes)) + 1;

std::string RouteName(int index) {
  return index < kNumRoutes - 1 ? std::string(kHttpRoutes[index])
                                : std::string(kOtherLabelValue);
}

std::string CodeName(int index) {
  return index < kNumCodes - 1 ? std::to_string(kHttpCodes[index])
                               : std::string(kOtherLabelValue);
}

}  // namespace

HttpSeries::HttpSeries(prometheus::Registry& registry)
    : requests_(&prometheus::BuildCounter()
                     .Name(std::string(kHttpRequestsTotal))
                     .Help("Answered HTTP requests, by route and status.")
                     .Register(registry)),
      durations_family_(&prometheus::BuildHistogram()
                             .Name(std::string(kHttpRequestDurationSeconds))
                             .Help("HTTP requests from header to answer.")
                             .Register(registry)),
      counts_(std::make_unique<std::atomic<prometheus::Counter*>[]>(
          kNumRoutes * kNumCodes)) {
  for (int route = 0; route < kNumRoutes; ++route) {
    durations_.push_back(
        &durations_family_->Add({{std::string(kRouteLabel), RouteName(route)}},
                                DurationBucketsSeconds()));
    CountOf(route, CodeIndex(200));
  }
}

HttpSeries::~HttpSeries() = default;

int HttpSeries::RouteIndex(absl::string_view route) {
  for (int i = 0; i < kNumRoutes - 1; ++i) {
    if (kHttpRoutes[i] == route) return i;
  }
  return kNumRoutes - 1;
}

int HttpSeries::CodeIndex(int status_code) {
  for (int i = 0; i < kNumCodes - 1; ++i) {
    if (kHttpCodes[i] == status_code) return i;
  }
  return kNumCodes - 1;
}

// Two threads racing here get the same counter: Family::Add returns an
// existing child.
prometheus::Counter* HttpSeries::CountOf(int route, int code) {
  std::atomic<prometheus::Counter*>& slot = counts_[route * kNumCodes + code];
  prometheus::Counter* counter = slot.load();
  if (counter == nullptr) {
    counter = &requests_->Add({{std::string(kRouteLabel), RouteName(route)},
                               {std::string(kCodeLabel), CodeName(code)}});
    slot.store(counter);
  }
  return counter;
}

void HttpSeries::Record(absl::string_view route, int status_code,
                        absl::Duration duration) {
  const int route_index = RouteIndex(route);
  durations_[route_index]->Observe(absl::ToDoubleSeconds(duration));
  CountOf(route_index, CodeIndex(status_code))->Increment();
}

}  // namespace favor::metrics
