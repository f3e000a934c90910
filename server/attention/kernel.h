// The attention kernels Favor implements, and what each one needs: one row
// of a table per kernel (kernel.cc), from which every list of kernel names
// is derived (configs, the API, help texts, metrics labels). A kernel's
// feature functions are its row in features.cc's table; a new kernel is an
// enumerator, those two rows and its functions.
//
// Every kernel but kSoftmaxExact is linear attention: out = φ(Q)(φ(K)ᵀV)
// normalised by φ(Q)(φ(K)ᵀ1), never forming the L×L matrix. The feature
// maps follow the Performer papers (Choromanski et al. 2021) and the
// linear-attention work they build on; docs/attention.md gives the formulas.
//
// LibTorch-free (its own target, favor::kernel), so that configs, the
// service and the tools can name kernels without linking LibTorch.
#ifndef FAVOR_SERVER_ATTENTION_KERNEL_H_
#define FAVOR_SERVER_ATTENTION_KERNEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace favor::attention {

enum class Kernel {
  // softmax(QKᵀ/√d)V, computed in tiles (O(L²) time, O(tile) memory).
  kSoftmaxExact,
  // FAVOR+: φ(x) = m^-1/2 exp(Wx' − ‖x'‖²/2), x' = d^-1/4 x. Positive,
  // unbiased.
  kFavorPositive,
  // FAVOR++ (optimal positive random features, Likhosherstov et al. 2022):
  // φ(x) = m^-1/2 D exp(A‖ω‖² + B Wx' − ‖x'‖²/2), B = √(1 − 4A), D = (1 −
  // 4A)^(d/4), with A chosen per sequence and head from its queries and keys
  // (favor_plus_plus.h). Positive, unbiased for any A < 1/4; A = 0 is FAVOR+.
  kFavorPlusPlus,
  // Hyperbolic positive features: (2m)^-1/2 exp(−‖x'‖²/2) [exp(Wx'),
  // exp(−Wx')].
  kFavorHyperbolic,
  // Trigonometric random Fourier features: m^-1/2 exp(‖x'‖²/2) [sin Wx', cos
  // Wx']. Unbiased too, but can go negative (which is why FAVOR+ exists).
  kTrigonometric,
  // Generalized attention with ReLU features: relu(Wx') + ε.
  kRelu,
  // ELU+1 (Katharopoulos et al. 2020): elu(x) + 1, no projection.
  kEluPlusOne,
  // Efficient attention (Shen et al. 2021): softmax of each query over its
  // channels, softmax of each key channel over the sequence, no projection.
  kExp,
};
inline constexpr int kNumKernels = static_cast<int>(Kernel::kExp) + 1;

// How a kernel's key features are shifted for numerical stability.
enum class KeyShift {
  kNone,        // features are bounded without a shift
  kScalar,      // one max per sequence and head (FAVOR+, hyperbolic, trig)
  kPerFeature,  // one max per sequence, head and feature (kExp)
};

// Static facts about a kernel: its row of the table.
struct KernelTraits {
  Kernel kernel = Kernel::kSoftmaxExact;
  // Stable lower-case name, used by configs, the API and metrics labels.
  absl::string_view name;
  bool uses_projection = false;  // needs an m×d random projection
  bool positive = false;         // features are never negative
  bool adds_epsilon = false;     // φ = f(x) + ε
  KeyShift key_shift = KeyShift::kNone;
  // Features per row of the projection (1: m features, 2: 2m); 0 for
  // kernels without a projection, whose feature count is the head size d.
  int features_per_projection_row = 0;
  // The estimator's constant factor is (n·m)^-1/2 with n this (FAVOR+,
  // FAVOR++ and trig: 1; hyperbolic: 2); 0: no factor. It cancels in
  // attention's normalisation; FeatureMap applies it.
  int estimator_scale_rows = 0;
  // φ = exp(u − ‖x'‖²/2 − shift) over one projection (FAVOR+ and FAVOR++,
  // whose projection is mapped first): what the fused CPU path computes.
  bool exp_of_projection = false;
  // A is chosen per sequence and head from the inputs' statistics before
  // the features are formed (FAVOR++).
  bool coefficient_per_sequence = false;
};

// Every kernel's row, in the enumeration's order.
absl::Span<const KernelTraits> AllKernels();

const KernelTraits& TraitsOf(Kernel kernel);

// Feature count of φ for `num_random_features` = m and head size d.
int64_t FeatureCount(Kernel kernel, int64_t num_random_features,
                     int64_t head_dim);

absl::string_view KernelName(Kernel kernel);
absl::StatusOr<Kernel> ParseKernel(absl::string_view name);

// Every kernel's name, separated by `separator` ("softmax, favor+, ...").
std::string KernelNames(absl::string_view separator = ", ");

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_KERNEL_H_
