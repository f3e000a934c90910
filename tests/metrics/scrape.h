// Test helpers: fetch /metrics over a real socket and read samples out of
// the text exposition format.
#ifndef FAVOR_TESTS_METRICS_SCRAPE_H_
#define FAVOR_TESTS_METRICS_SCRAPE_H_

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace favor::metrics::scrape {

struct HttpResponse {
  int status_code = 0;
  std::string headers;  // The header lines, as received.
  std::string body;
};

// `GET <path>` from 127.0.0.1:<port> (tests/http/http_client.h, on the
// server's HTTP library). Gives up after 10 s.
absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view path);

using LabelSet = std::map<std::string, std::string>;

// The value of the sample `name` whose labels are exactly `labels`, or
// nullopt when the exposition has none.
std::optional<double> FindSample(absl::string_view exposition,
                                 absl::string_view name,
                                 const LabelSet& labels);

// The number of samples named `name`, whatever their labels.
int CountSamples(absl::string_view exposition, absl::string_view name);

}  // namespace favor::metrics::scrape

#endif  // FAVOR_TESTS_METRICS_SCRAPE_H_
