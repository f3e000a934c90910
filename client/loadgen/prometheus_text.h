// Reading the Prometheus text exposition format (version 0.0.4), as served
// by favor-server's /metrics: enough of it to pick samples by name and
// labels. Comments (# HELP, # TYPE) are skipped; timestamps are accepted and
// ignored.
#ifndef FAVOR_CLIENT_LOADGEN_PROMETHEUS_TEXT_H_
#define FAVOR_CLIENT_LOADGEN_PROMETHEUS_TEXT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace favor::bench {

using LabelSet = std::map<std::string, std::string>;

struct PrometheusSample {
  std::string name;  // with its suffix: favor_queue_duration_seconds_sum
  LabelSet labels;   // label values unescaped
  double value = 0;  // NaN, +Inf and -Inf as written
};

// Every sample of `text`; DATA_LOSS naming the line when one is malformed.
absl::StatusOr<std::vector<PrometheusSample>> ParsePrometheusText(
    absl::string_view text);

// The sum of the values of the samples named `name` whose labels include
// every pair of `match` (other labels may differ, and are summed over); 0
// when none does.
double SumSamples(const std::vector<PrometheusSample>& samples,
                  absl::string_view name, const LabelSet& match);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_PROMETHEUS_TEXT_H_
