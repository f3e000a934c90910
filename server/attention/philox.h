// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11): a counter-based generator, so a value depends only on (key,
// counter) and is the same on every machine and every LibTorch version.
// Favor draws its random projections from it instead of LibTorch's
// generators, whose streams are not promised stable across releases.
#ifndef FAVOR_SERVER_ATTENTION_PHILOX_H_
#define FAVOR_SERVER_ATTENTION_PHILOX_H_

#include <array>
#include <cstdint>

namespace favor::attention {

using PhiloxBlock = std::array<uint32_t, 4>;

// Ten rounds of Philox4x32 on `counter` under `key` (a 64-bit seed).
PhiloxBlock Philox4x32(PhiloxBlock counter, uint64_t key);

// Standard normal variates from Philox: value i of the stream (seed, stream)
// is a pure function of (seed, stream, i). Uses Box–Muller in double
// precision on two 32-bit uniforms per pair.
class GaussianStream {
 public:
  GaussianStream(uint64_t seed, uint64_t stream)
      : seed_(seed), stream_(stream) {}

  // The next variate of the stream.
  double Next();

 private:
  uint64_t seed_;
  uint64_t stream_;
  uint64_t block_index_ = 0;
  std::array<double, 4> buffer_{};
  int buffered_ = 0;
};

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_PHILOX_H_
