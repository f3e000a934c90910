#include "client/loadgen/length_distribution.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace favor::bench {
namespace {

constexpr int64_t kUncappedMaxTokens = int64_t{1} << 31;

absl::Status BadSpec(absl::string_view spec, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "length distribution '", spec, "': ", why,
      " (want fixed:N, uniform:MIN:MAX or lognormal:MEDIAN:SIGMA)"));
}

}  // namespace

absl::StatusOr<LengthDistribution> LengthDistribution::Parse(
    absl::string_view spec) {
  const std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
  LengthDistribution lengths;
  if (parts[0] == "fixed" && parts.size() == 2) {
    if (!absl::SimpleAtoi(parts[1], &lengths.min_tokens_)) {
      return BadSpec(spec, "N is not an integer");
    }
    lengths.kind_ = Kind::kFixed;
    lengths.max_tokens_ = lengths.min_tokens_;
  } else if (parts[0] == "uniform" && parts.size() == 3) {
    if (!absl::SimpleAtoi(parts[1], &lengths.min_tokens_) ||
        !absl::SimpleAtoi(parts[2], &lengths.max_tokens_)) {
      return BadSpec(spec, "MIN or MAX is not an integer");
    }
    if (lengths.max_tokens_ < lengths.min_tokens_) {
      return BadSpec(spec, "MAX is below MIN");
    }
    lengths.kind_ = Kind::kUniform;
  } else if (parts[0] == "lognormal" && parts.size() == 3) {
    if (!absl::SimpleAtod(parts[1], &lengths.median_tokens_) ||
        !absl::SimpleAtod(parts[2], &lengths.sigma_) ||
        !(lengths.median_tokens_ >= 1) || !(lengths.sigma_ >= 0) ||
        !std::isfinite(lengths.median_tokens_) ||
        !std::isfinite(lengths.sigma_)) {
      return BadSpec(spec, "want MEDIAN >= 1 and SIGMA >= 0");
    }
    lengths.kind_ = Kind::kLogNormal;
    lengths.max_tokens_ = kUncappedMaxTokens;
  } else {
    return BadSpec(spec, "unknown form");
  }
  if (lengths.min_tokens_ < 1) return BadSpec(spec, "lengths must be >= 1");
  return lengths;
}

LengthDistribution LengthDistribution::Fixed(int64_t tokens) {
  LengthDistribution lengths;
  lengths.min_tokens_ = tokens;
  lengths.max_tokens_ = tokens;
  return lengths;
}

absl::StatusOr<LengthDistribution> LengthDistribution::CappedAt(
    int64_t max_tokens) const {
  if (max_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("length cap ", max_tokens, " is below 1"));
  }
  if (kind_ != Kind::kLogNormal && min_tokens_ > max_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "length distribution '", ToString(), "' asks for ", min_tokens_,
        " tokens per input, over the cap of ", max_tokens));
  }
  LengthDistribution capped = *this;
  capped.max_tokens_ = std::min(max_tokens_, max_tokens);
  capped.capped_ = true;
  return capped;
}

int64_t LengthDistribution::Sample(Random& random) const {
  switch (kind_) {
    case Kind::kFixed:
      return min_tokens_;
    case Kind::kUniform:
      return random.UniformInt(min_tokens_, max_tokens_);
    case Kind::kLogNormal: {
      const double draw =
          std::exp(std::log(median_tokens_) + sigma_ * random.Normal());
      const double rounded = std::round(draw);
      if (!(rounded < static_cast<double>(max_tokens_))) return max_tokens_;
      return std::max<int64_t>(1, static_cast<int64_t>(rounded));
    }
  }
  return min_tokens_;
}

std::string LengthDistribution::ToString() const {
  std::string spec;
  switch (kind_) {
    case Kind::kFixed:
      spec = absl::StrCat("fixed:", min_tokens_);
      break;
    case Kind::kUniform:
      spec = absl::StrCat("uniform:", min_tokens_, ":", max_tokens_);
      break;
    case Kind::kLogNormal:
      spec = absl::StrCat("lognormal:", median_tokens_, ":", sigma_);
      break;
  }
  if (capped_ && kind_ == Kind::kLogNormal) {
    absl::StrAppend(&spec, ",max=", max_tokens_);
  }
  return spec;
}

}  // namespace favor::bench
