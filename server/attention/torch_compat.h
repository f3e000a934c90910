#ifndef FAVOR_SERVER_ATTENTION_TORCH_COMPAT_H_
#define FAVOR_SERVER_ATTENTION_TORCH_COMPAT_H_

// Where the two LibTorch versions Favor supports differ: Debian 12's 1.13
// and Debian 13's 2.6 (README, "Platforms"). Every `#if` on the version
// lives here, so the rest of the code compiles against both as written.

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <torch/version.h>

#include <cstddef>
#include <optional>

namespace favor::torch_compat {

// A c10::Allocator whose allocation is a const member, as 1.13 declares it.
// 2.x made c10::Allocator::allocate non-const and added a pure virtual
// copy_data; this class bridges both, so an allocator implements Allocate
// once.
class Allocator : public c10::Allocator {
 public:
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t n) final { return Allocate(n); }
  void copy_data(void* dest, const void* src, size_t count) const final {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const final { return Allocate(n); }
#endif

 protected:
  virtual c10::DataPtr Allocate(size_t n) const = 0;
};

// True where LibTorch has at::scaled_dot_product_attention (2.x: fused on
// the CPU, FlashAttention on a GPU).
inline constexpr bool kHasScaledDotProductAttention = TORCH_VERSION_MAJOR >= 2;

// at::scaled_dot_product_attention(query, key, value, mask, causal) where
// LibTorch has it (query, key, value: [..., length, dim]; mask: bool, true
// where a key takes part, broadcastable to the scores, or undefined; causal
// only without a mask); nullopt on 1.13.
inline std::optional<at::Tensor> ScaledDotProductAttention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& mask = {}, bool causal = false) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(
      query, key, value,
      mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt,
      /*dropout_p=*/0.0, causal);
#else
  (void)query, (void)key, (void)value, (void)mask, (void)causal;
  return std::nullopt;
#endif
}

}  // namespace favor::torch_compat

#endif  // FAVOR_SERVER_ATTENTION_TORCH_COMPAT_H_
