#include "server/attention/device.h"

#include <ATen/Context.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace favor::attention {

absl::StatusOr<c10::Device> ParseDevice(absl::string_view name) {
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (name != "cuda" && !absl::StartsWith(name, "cuda:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device '", name, "' is not \"cpu\", \"cuda\" or \"cuda:N\""));
  }
  c10::Device device(c10::kCPU);
  try {
    device = c10::Device(std::string(name));
  } catch (const c10::Error&) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", name, "' is not \"cuda:N\""));
  }
  const int64_t available = at::hasCUDA() ? at::getNumGPUs() : 0;
  const int64_t index = device.has_index() ? device.index() : 0;
  if (index >= available) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device '", name, "' is not available: LibTorch sees ", available,
        " CUDA device(s)", at::hasCUDA() ? "" : " (built without CUDA)"));
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace favor::attention
