#include "server/attention/kernel.h"

#include <array>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace favor::attention {
namespace {

// One row per kernel, in the enumeration's order (checked below). Columns:
// kernel, name, uses_projection, positive, adds_epsilon, key_shift,
// features_per_projection_row, estimator_scale_rows, exp_of_projection,
// coefficient_per_sequence.
constexpr std::array<KernelTraits, kNumKernels> kKernels = {{
    {Kernel::kSoftmaxExact, "softmax", false, true, false, KeyShift::kNone, 0,
     0, false, false},
    {Kernel::kFavorPositive, "favor+", true, true, true, KeyShift::kScalar, 1,
     1, true, false},
    {Kernel::kFavorPlusPlus, "favor++", true, true, true, KeyShift::kScalar, 1,
     1, true, true},
    {Kernel::kFavorHyperbolic, "hyperbolic", true, true, true,
     KeyShift::kScalar, 2, 2, false, false},
    {Kernel::kTrigonometric, "trig", true, false, false, KeyShift::kScalar, 2,
     1, false, false},
    {Kernel::kRelu, "relu", true, true, true, KeyShift::kNone, 1, 0, false,
     false},
    {Kernel::kEluPlusOne, "elu+1", false, true, false, KeyShift::kNone, 0, 0,
     false, false},
    {Kernel::kExp, "exp", false, true, false, KeyShift::kPerFeature, 0, 0,
     false, false},
}};

constexpr bool RowsFollowTheEnumeration() {
  for (int i = 0; i < kNumKernels; ++i) {
    if (static_cast<int>(kKernels[i].kernel) != i) return false;
  }
  return true;
}
static_assert(RowsFollowTheEnumeration(),
              "kKernels must hold one row per Kernel, in enumeration order");

}  // namespace

absl::Span<const KernelTraits> AllKernels() { return kKernels; }

const KernelTraits& TraitsOf(Kernel kernel) {
  return kKernels[static_cast<int>(kernel)];
}

int64_t FeatureCount(Kernel kernel, int64_t num_random_features,
                     int64_t head_dim) {
  const int per_row = TraitsOf(kernel).features_per_projection_row;
  return per_row == 0 ? head_dim : per_row * num_random_features;
}

absl::string_view KernelName(Kernel kernel) { return TraitsOf(kernel).name; }

absl::StatusOr<Kernel> ParseKernel(absl::string_view name) {
  for (const KernelTraits& traits : kKernels) {
    if (traits.name == name) return traits.kernel;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown attention kernel '", name, "'; known kernels: ", KernelNames()));
}

std::string KernelNames(absl::string_view separator) {
  std::string names;
  for (const KernelTraits& traits : kKernels) {
    absl::StrAppend(&names, names.empty() ? "" : separator, traits.name);
  }
  return names;
}

}  // namespace favor::attention
