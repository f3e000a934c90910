// The running key sums of linear attention over a range of keys.
// Implementation detail of server/attention (attention.h is the interface).
#ifndef FAVOR_SERVER_ATTENTION_KEY_STATE_H_
#define FAVOR_SERVER_ATTENTION_KEY_STATE_H_

#include <ATen/core/Tensor.h>

namespace favor::attention {

// Σ over a range of keys of φ̃(k)[v | 1]ᵀ, where φ̃ is the key feature
// shifted by `shift` and without ε, and of [v | 1] itself (for the ε term).
// Masked keys contribute nothing.
struct KeyState {
  at::Tensor sums;        // (G, F, dv + 1)
  at::Tensor shift;       // (G, 1, 1) or (G, 1, F); undefined: no shift
  at::Tensor value_sums;  // (G, 1, dv + 1)
};

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_KEY_STATE_H_
