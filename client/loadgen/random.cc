#include "client/loadgen/random.h"

#include <cmath>

namespace favor::bench {

double Random::Uniform01() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

int64_t Random::UniformInt(int64_t low, int64_t high) {
  const uint64_t span = static_cast<uint64_t>(high - low) + 1;
  if (span == 0) return static_cast<int64_t>(engine_());  // the full range
  // Rejection keeps every value equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t draw = engine_();
  while (draw >= limit) draw = engine_();
  return low + static_cast<int64_t>(draw % span);
}

double Random::Normal() {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  // 1 - u is in (0, 1], so its logarithm is finite.
  const double radius = std::sqrt(-2.0 * std::log(1.0 - Uniform01()));
  return radius * std::cos(kTwoPi * Uniform01());
}

double Random::Exponential(double rate) {
  return -std::log(1.0 - Uniform01()) / rate;
}

}  // namespace favor::bench
