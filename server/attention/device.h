// The device a model or an Attend call computes on, from its name.
#ifndef FAVOR_SERVER_ATTENTION_DEVICE_H_
#define FAVOR_SERVER_ATTENTION_DEVICE_H_

#include <c10/core/Device.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace favor::attention {

// "cpu", "cuda" (device 0) or "cuda:N". INVALID_ARGUMENT for any other name,
// and for a CUDA device that LibTorch does not see (saying how many it sees,
// and whether it was built without CUDA).
absl::StatusOr<c10::Device> ParseDevice(absl::string_view name);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_DEVICE_H_
