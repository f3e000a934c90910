// Request lengths, in tokens, for the load generator: fixed, uniform or
// log-normal, written as a short spec on the command line.
//
//   fixed:N              every input N tokens
//   uniform:MIN:MAX      each length equally likely in [MIN, MAX]
//   lognormal:MEDIAN:SIGMA
//                        exp(N(ln MEDIAN, SIGMA²)) rounded, so half of the
//                        inputs are shorter than MEDIAN; SIGMA is the
//                        standard deviation of the logarithm (0.5: most
//                        lengths within a factor of 2.7 of the median)
//
// Every draw is at least 1 and at most max_tokens() (the cap of CappedAt,
// e.g. the model's max_tokens_per_input; uncapped log-normal draws stop at
// 2^31).
#ifndef FAVOR_CLIENT_LOADGEN_LENGTH_DISTRIBUTION_H_
#define FAVOR_CLIENT_LOADGEN_LENGTH_DISTRIBUTION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/loadgen/random.h"

namespace favor::bench {

class LengthDistribution {
 public:
  enum class Kind { kFixed, kUniform, kLogNormal };

  // INVALID_ARGUMENT naming the spec when it is not one of the forms above
  // or a length is below 1.
  static absl::StatusOr<LengthDistribution> Parse(absl::string_view spec);
  // fixed:tokens (tokens >= 1).
  static LengthDistribution Fixed(int64_t tokens);

  // The same distribution with every draw at most `max_tokens`;
  // INVALID_ARGUMENT when a fixed length or a uniform minimum is already
  // over it (the run could only send refused requests). A uniform maximum
  // over it is lowered to it; log-normal draws are clamped.
  absl::StatusOr<LengthDistribution> CappedAt(int64_t max_tokens) const;

  int64_t Sample(Random& random) const;

  Kind kind() const { return kind_; }
  // The largest length a draw can have.
  int64_t max_tokens() const { return max_tokens_; }
  // The spec, as Parse reads it; a capped log-normal adds ",max=N".
  std::string ToString() const;

 private:
  LengthDistribution() = default;

  Kind kind_ = Kind::kFixed;
  int64_t min_tokens_ = 1;  // fixed: the length; uniform: MIN
  int64_t max_tokens_ = 1;  // fixed: the length; uniform: MAX; else the cap
  double median_tokens_ = 1;
  double sigma_ = 0;
  bool capped_ = false;
};

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_LENGTH_DISTRIBUTION_H_
