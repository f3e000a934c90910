// The bench's source of randomness: one seeded 64-bit generator and the few
// draws the load needs, computed here rather than with <random>'s
// distributions, whose output the C++ standard leaves to each library. The
// same seed gives the same lengths, arrivals and token ids everywhere.
#ifndef FAVOR_CLIENT_LOADGEN_RANDOM_H_
#define FAVOR_CLIENT_LOADGEN_RANDOM_H_

#include <cstdint>
#include <random>

namespace favor::bench {

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1), 53 random bits.
  double Uniform01();
  // Uniform integer in [low, high] (inclusive); low <= high.
  int64_t UniformInt(int64_t low, int64_t high);
  // Standard normal (Box-Muller, one value per call).
  double Normal();
  // Exponential with the given rate (mean 1 / rate); rate > 0.
  double Exponential(double rate);

 private:
  std::mt19937_64 engine_;
};

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_RANDOM_H_
