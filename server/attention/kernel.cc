#include "server/attention/kernel.h"

#include <array>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace favor::attention {
namespace {

constexpr std::array<std::pair<Kernel, absl::string_view>, 8> kNames = {{
    {Kernel::kSoftmaxExact, "softmax"},
    {Kernel::kFavorPositive, "favor+"},
    {Kernel::kFavorPlusPlus, "favor++"},
    {Kernel::kFavorHyperbolic, "hyperbolic"},
    {Kernel::kTrigonometric, "trig"},
    {Kernel::kRelu, "relu"},
    {Kernel::kEluPlusOne, "elu+1"},
    {Kernel::kExp, "exp"},
}};

}  // namespace

KernelTraits TraitsOf(Kernel kernel) {
  KernelTraits traits;
  switch (kernel) {
    case Kernel::kSoftmaxExact:
    case Kernel::kEluPlusOne:
      traits.positive = true;
      break;
    case Kernel::kFavorPositive:
    case Kernel::kFavorPlusPlus:
    case Kernel::kFavorHyperbolic:
      traits.uses_projection = true;
      traits.positive = true;
      traits.adds_epsilon = true;
      traits.key_shift = KeyShift::kScalar;
      break;
    case Kernel::kTrigonometric:
      traits.uses_projection = true;
      traits.key_shift = KeyShift::kScalar;
      break;
    case Kernel::kRelu:
      traits.uses_projection = true;
      traits.positive = true;
      traits.adds_epsilon = true;
      break;
    case Kernel::kExp:
      traits.positive = true;
      traits.key_shift = KeyShift::kPerFeature;
      break;
  }
  return traits;
}

int64_t FeatureCount(Kernel kernel, int64_t num_random_features,
                     int64_t head_dim) {
  switch (kernel) {
    case Kernel::kFavorPositive:
    case Kernel::kFavorPlusPlus:
    case Kernel::kRelu:
      return num_random_features;
    case Kernel::kFavorHyperbolic:
    case Kernel::kTrigonometric:
      return 2 * num_random_features;
    case Kernel::kSoftmaxExact:
    case Kernel::kEluPlusOne:
    case Kernel::kExp:
      return head_dim;
  }
  return head_dim;
}

absl::string_view KernelName(Kernel kernel) {
  for (const auto& [k, name] : kNames) {
    if (k == kernel) return name;
  }
  return "unknown";
}

absl::StatusOr<Kernel> ParseKernel(absl::string_view name) {
  std::string known;
  for (const auto& [k, kernel_name] : kNames) {
    if (kernel_name == name) return k;
    absl::StrAppend(&known, known.empty() ? "" : ", ", kernel_name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown attention kernel '", name, "'; known kernels: ", known));
}

}  // namespace favor::attention
