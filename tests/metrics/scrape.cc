#include "tests/metrics/scrape.h"

#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/http/http_client.h"

namespace favor::metrics::scrape {
namespace {

// Splits `name{a="x",b="y"} 1.5` into its parts; false for other lines.
bool ParseSample(absl::string_view line, absl::string_view& name,
                 LabelSet& labels, double& value) {
  if (line.empty() || line[0] == '#') return false;
  const size_t space = line.rfind(' ');
  if (space == absl::string_view::npos) return false;
  absl::string_view series = line.substr(0, space);
  if (!absl::SimpleAtod(line.substr(space + 1), &value)) return false;
  labels.clear();
  const size_t brace = series.find('{');
  name = series.substr(0, brace);
  if (brace == absl::string_view::npos) return true;
  absl::string_view pairs = series.substr(brace + 1);
  if (!absl::ConsumeSuffix(&pairs, "}")) return false;
  // Label values in these tests hold no commas or escaped quotes.
  for (absl::string_view pair : absl::StrSplit(pairs, ',', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(pair, absl::MaxSplits('=', 1));
    absl::string_view quoted = kv.second;
    if (!absl::ConsumePrefix(&quoted, "\"") ||
        !absl::ConsumeSuffix(&quoted, "\"")) {
      return false;
    }
    labels[std::string(kv.first)] = std::string(quoted);
  }
  return true;
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(int port, absl::string_view path) {
  http::testing::FetchOptions options;
  options.target = std::string(path);
  options.headers = {{"Connection", "close"}};
  absl::StatusOr<http::testing::Fetched> fetched =
      http::testing::Fetch(port, options);
  if (!fetched.ok()) return fetched.status();
  HttpResponse response;
  response.status_code = fetched->status;
  response.headers = std::move(fetched->headers);
  response.body = std::move(fetched->body);
  return response;
}

std::optional<double> FindSample(absl::string_view exposition,
                                 absl::string_view name,
                                 const LabelSet& labels) {
  absl::string_view sample_name;
  LabelSet sample_labels;
  double value = 0;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (ParseSample(line, sample_name, sample_labels, value) &&
        sample_name == name && sample_labels == labels) {
      return value;
    }
  }
  return std::nullopt;
}

int CountSamples(absl::string_view exposition, absl::string_view name) {
  absl::string_view sample_name;
  LabelSet labels;
  double value = 0;
  int count = 0;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (ParseSample(line, sample_name, labels, value) && sample_name == name) {
      ++count;
    }
  }
  return count;
}

}  // namespace favor::metrics::scrape
