#include "server/service/attend_inputs.h"

#include <ATen/ATen.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "server/attention/kernel.h"
#include "server/attention/projection.h"
#include "server/common/status_macros.h"

namespace favor::service {
at::ScalarType ScalarTypeOf(v1::Dtype dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT16:
      return at::kHalf;
    case v1::DTYPE_BFLOAT16:
      return at::kBFloat16;
    default:
      return at::kFloat;
  }
}

namespace {

// `host` (a CPU tensor that owns its memory) on `device`.
at::Tensor ToDevice(const at::Tensor& host, c10::Device device) {
  if (device.is_cpu()) return host;
  if (device.is_cuda()) {
    return host.pin_memory().to(device, /*non_blocking=*/true);
  }
  return host.to(device);
}

// A float32 copy of a validated tensor on `device`; INVALID_ARGUMENT on NaN
// or infinity.
absl::StatusOr<at::Tensor> FloatTensorOn(absl::string_view field,
                                         const v1::Tensor& tensor,
                                         c10::Device device) {
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  // from_blob does not copy or write; .to() / .clone() make the copy, so the
  // tensor never outlives the proto's bytes.
  void* data = const_cast<char*>(tensor.data().data());
  const at::Tensor view = at::from_blob(
      data, shape, at::TensorOptions().dtype(ScalarTypeOf(tensor.dtype())));
  const at::Tensor copy = view.to(at::kFloat).contiguous().clone();
  if (!at::isfinite(copy).all().item<bool>()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".data holds NaN or infinity"));
  }
  return ToDevice(copy, device);
}

absl::StatusOr<at::Tensor> ProjectionOf(const AttendPlan& plan,
                                        const v1::AttendRequest& request,
                                        c10::Device device) {
  if (!attention::TraitsOf(plan.kernel).uses_projection) return at::Tensor();
  if (request.has_projection_matrix()) {
    return FloatTensorOn("projection_matrix", request.projection_matrix(),
                         device);
  }
  attention::ProjectionOptions options;
  options.num_features = plan.num_random_features;
  options.head_dim = plan.head_dim;
  options.orthogonal = request.random_features() != v1::RANDOM_FEATURES_IID;
  options.simplex = request.random_features() == v1::RANDOM_FEATURES_SIMPLEX;
  options.row_norm = request.row_norm() == v1::ROW_NORM_SQRT_DIM
                         ? attention::ProjectionOptions::RowNorm::kSqrtDim
                         : attention::ProjectionOptions::RowNorm::kChi;
  options.seed = request.projection_seed();
  ASSIGN_OR_RETURN(at::Tensor drawn, attention::DrawProjection(options));
  return ToDevice(drawn.contiguous(), device);
}

at::Tensor MaskOn(const AttendPlan& plan, const v1::AttendRequest& request,
                  c10::Device device) {
  if (request.key_padding_mask_size() == 0) return at::Tensor();
  at::Tensor mask = at::empty({plan.batch, plan.key_length}, at::kBool);
  bool* out = mask.data_ptr<bool>();
  for (int i = 0; i < request.key_padding_mask_size(); ++i) {
    out[i] = request.key_padding_mask(i);
  }
  return ToDevice(mask, device);
}

}  // namespace

absl::StatusOr<AttendInputs> PlaceAttendInputs(const AttendPlan& plan,
                                               const v1::AttendRequest& request,
                                               c10::Device device) {
  AttendInputs inputs;
  ASSIGN_OR_RETURN(inputs.query,
                   FloatTensorOn("query", request.query(), device));
  ASSIGN_OR_RETURN(inputs.key, FloatTensorOn("key", request.key(), device));
  ASSIGN_OR_RETURN(inputs.value,
                   FloatTensorOn("value", request.value(), device));
  ASSIGN_OR_RETURN(inputs.projection, ProjectionOf(plan, request, device));
  inputs.key_padding_mask = MaskOn(plan, request, device);
  return inputs;
}

}  // namespace favor::service
