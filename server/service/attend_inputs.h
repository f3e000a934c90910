// The tensors of one validated AttendRequest, placed on the device that
// computes it. Service-internal (includes ATen): attend_runner.cc and its
// test are the only includers.
//
// Each tensor is read from the proto's bytes into float32 host memory,
// checked for NaN and infinity there (no device round trip), and copied to
// the device: on CUDA from pinned memory with a non-blocking copy, so the
// copies of Q, K and V overlap (LibTorch's pinned-memory allocator keeps a
// buffer until its copy has finished). On the CPU the float32 copy is the
// tensor itself.
#ifndef FAVOR_SERVER_SERVICE_ATTEND_INPUTS_H_
#define FAVOR_SERVER_SERVICE_ATTEND_INPUTS_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "absl/status/statusor.h"
#include "favor/v1/favor.pb.h"
#include "server/service/attend_validation.h"

namespace favor::service {

struct AttendInputs {
  at::Tensor query;             // (B, H, Lq, d) float32
  at::Tensor key;               // (B, H, Lk, d) float32
  at::Tensor value;             // (B, H, Lk, dv) float32
  at::Tensor projection;        // (m, d) float32; undefined if unused
  at::Tensor key_padding_mask;  // (B, Lk) bool; undefined if none
};

// The LibTorch dtype of a tensor's proto dtype (float32 when unset).
at::ScalarType ScalarTypeOf(v1::Dtype dtype);

// The inputs of `request` (validated into `plan`) on `device`;
// INVALID_ARGUMENT naming the field for NaN or infinity.
absl::StatusOr<AttendInputs> PlaceAttendInputs(const AttendPlan& plan,
                                               const v1::AttendRequest& request,
                                               c10::Device device);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_ATTEND_INPUTS_H_
