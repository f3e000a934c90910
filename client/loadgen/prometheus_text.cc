#include "client/loadgen/prometheus_text.h"

#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace favor::bench {
namespace {

bool IsNameChar(char c, bool first) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_' ||
         c == ':' ||
         (!first && absl::ascii_isdigit(static_cast<unsigned char>(c)));
}

// Consumes a metric or label name from the front of `line`.
bool ConsumeName(absl::string_view* line, std::string* name) {
  size_t length = 0;
  while (length < line->size() && IsNameChar((*line)[length], length == 0)) {
    ++length;
  }
  if (length == 0) return false;
  *name = std::string(line->substr(0, length));
  line->remove_prefix(length);
  return true;
}

// Consumes `"value"` with the format's three escapes (\\, \", \n).
bool ConsumeQuoted(absl::string_view* line, std::string* value) {
  if (!absl::ConsumePrefix(line, "\"")) return false;
  value->clear();
  while (!line->empty()) {
    const char c = line->front();
    line->remove_prefix(1);
    if (c == '"') return true;
    if (c != '\\') {
      value->push_back(c);
      continue;
    }
    if (line->empty()) return false;
    const char escaped = line->front();
    line->remove_prefix(1);
    value->push_back(escaped == 'n' ? '\n' : escaped);
  }
  return false;  // no closing quote
}

// Consumes `{a="x",b="y"}` (a trailing comma is allowed, as in the format).
bool ConsumeLabels(absl::string_view* line, LabelSet* labels) {
  if (!absl::ConsumePrefix(line, "{")) return true;  // no labels
  for (;;) {
    *line = absl::StripLeadingAsciiWhitespace(*line);
    if (absl::ConsumePrefix(line, "}")) return true;
    std::string name;
    std::string value;
    if (!ConsumeName(line, &name)) return false;
    *line = absl::StripLeadingAsciiWhitespace(*line);
    if (!absl::ConsumePrefix(line, "=")) return false;
    *line = absl::StripLeadingAsciiWhitespace(*line);
    if (!ConsumeQuoted(line, &value)) return false;
    (*labels)[name] = value;
    *line = absl::StripLeadingAsciiWhitespace(*line);
    if (!absl::ConsumePrefix(line, ",") && !absl::StartsWith(*line, "}")) {
      return false;
    }
  }
}

bool ParseValue(absl::string_view text, double* value) {
  if (text == "+Inf" || text == "Inf") {
    *value = std::numeric_limits<double>::infinity();
  } else if (text == "-Inf") {
    *value = -std::numeric_limits<double>::infinity();
  } else if (text == "NaN") {
    *value = std::numeric_limits<double>::quiet_NaN();
  } else {
    return absl::SimpleAtod(text, value);
  }
  return true;
}

bool ParseSampleLine(absl::string_view line, PrometheusSample* sample) {
  if (!ConsumeName(&line, &sample->name)) return false;
  if (!ConsumeLabels(&line, &sample->labels)) return false;
  // The value, then an optional timestamp.
  const std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.empty() || fields.size() > 2) return false;
  return ParseValue(fields[0], &sample->value);
}

}  // namespace

absl::StatusOr<std::vector<PrometheusSample>> ParsePrometheusText(
    absl::string_view text) {
  std::vector<PrometheusSample> samples;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    PrometheusSample sample;
    if (!ParseSampleLine(line, &sample)) {
      return absl::DataLossError(absl::StrCat(
          "metrics line ", line_number, " is not a sample: '", line, "'"));
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

double SumSamples(const std::vector<PrometheusSample>& samples,
                  absl::string_view name, const LabelSet& match) {
  double sum = 0;
  for (const PrometheusSample& sample : samples) {
    if (sample.name != name) continue;
    bool matches = true;
    for (const auto& [label, value] : match) {
      auto found = sample.labels.find(label);
      if (found == sample.labels.end() || found->second != value) {
        matches = false;
        break;
      }
    }
    if (matches) sum += sample.value;
  }
  return sum;
}

}  // namespace favor::bench
