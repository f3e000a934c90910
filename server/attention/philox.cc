#include "server/attention/philox.h"

#include <cmath>

namespace favor::attention {
namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;
constexpr double kTwoPi = 6.283185307179586476925286766559;

// Maps 32 random bits to (0, 1], never 0, so that log() is finite.
double ToUnitInterval(uint32_t bits) {
  return (static_cast<double>(bits) + 1.0) * (1.0 / 4294967296.0);
}

}  // namespace

PhiloxBlock Philox4x32(PhiloxBlock counter, uint64_t key) {
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMultiplier0) * counter[0];
    const uint64_t p1 = static_cast<uint64_t>(kMultiplier1) * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ k0,
               static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ k1,
               static_cast<uint32_t>(p0)};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return counter;
}

double GaussianStream::Next() {
  if (buffered_ == 0) {
    const PhiloxBlock bits = Philox4x32(
        {static_cast<uint32_t>(block_index_),
         static_cast<uint32_t>(block_index_ >> 32),
         static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
        seed_);
    ++block_index_;
    for (int pair = 0; pair < 2; ++pair) {
      const double radius =
          std::sqrt(-2.0 * std::log(ToUnitInterval(bits[2 * pair])));
      const double angle = kTwoPi * ToUnitInterval(bits[2 * pair + 1]);
      buffer_[2 * pair] = radius * std::cos(angle);
      buffer_[2 * pair + 1] = radius * std::sin(angle);
    }
    buffered_ = 4;
  }
  return buffer_[4 - buffered_--];
}

}  // namespace favor::attention
