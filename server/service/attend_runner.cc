#include "server/service/attend_runner.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/attention/attention.h"
#include "server/attention/projection.h"
#include "server/common/status_macros.h"

namespace favor::service {
namespace {

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

// A float32 copy of a validated tensor; INVALID_ARGUMENT on NaN or infinity.
absl::StatusOr<at::Tensor> ToFloatTensor(absl::string_view field,
                                         const v1::Tensor& tensor) {
  std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  // from_blob does not copy or write; .to() / .clone() make the copy, so the
  // tensor never outlives the proto's bytes.
  void* data = const_cast<char*>(tensor.data().data());
  at::Tensor view = at::from_blob(
      data, shape, at::TensorOptions().dtype(ScalarTypeOf(tensor.dtype())));
  at::Tensor copy = view.to(at::kFloat).contiguous().clone();
  if (!at::isfinite(copy).all().item<bool>()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".data holds NaN or infinity"));
  }
  return copy;
}

absl::StatusOr<at::Tensor> ProjectionOf(const AttendPlan& plan,
                                        const v1::AttendRequest& request) {
  if (!attention::TraitsOf(plan.kernel).uses_projection) return at::Tensor();
  if (request.has_projection_matrix()) {
    return ToFloatTensor("projection_matrix", request.projection_matrix());
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
  return attention::DrawProjection(options);
}

at::Tensor MaskOf(const AttendPlan& plan, const v1::AttendRequest& request) {
  if (request.key_padding_mask_size() == 0) return at::Tensor();
  at::Tensor mask = at::empty({plan.batch, plan.key_length}, at::kBool);
  bool* out = mask.data_ptr<bool>();
  for (int i = 0; i < request.key_padding_mask_size(); ++i) {
    out[i] = request.key_padding_mask(i);
  }
  return mask;
}

void WriteOutput(const at::Tensor& output, v1::Dtype dtype,
                 v1::Tensor* tensor) {
  at::Tensor typed = output.to(ScalarTypeOf(dtype)).contiguous();
  tensor->clear_shape();
  for (int64_t dim : typed.sizes()) tensor->add_shape(dim);
  tensor->set_dtype(dtype);
  tensor->mutable_data()->assign(static_cast<const char*>(typed.data_ptr()),
                                 typed.numel() * typed.element_size());
}

}  // namespace

absl::Status ComputeAttend(const AttendPlan& plan,
                           const v1::AttendRequest& request,
                           v1::AttendResponse* response) {
  c10::InferenceMode inference_mode;
  ASSIGN_OR_RETURN(at::Tensor q, ToFloatTensor("query", request.query()));
  ASSIGN_OR_RETURN(at::Tensor k, ToFloatTensor("key", request.key()));
  ASSIGN_OR_RETURN(at::Tensor v, ToFloatTensor("value", request.value()));
  ASSIGN_OR_RETURN(at::Tensor projection, ProjectionOf(plan, request));
  attention::AttentionOptions options;
  options.kernel = plan.kernel;
  options.causal = request.causal();
  ASSIGN_OR_RETURN(
      at::Tensor output,
      attention::Attend(q, k, v, projection, MaskOf(plan, request), options));
  WriteOutput(output, request.query().dtype(), response->mutable_output());
  response->set_kernel(std::string(attention::KernelName(plan.kernel)));
  response->set_num_features(
      plan.kernel == attention::Kernel::kSoftmaxExact
          ? 0
          : attention::FeatureCount(plan.kernel, plan.num_random_features,
                                    plan.head_dim));
  return absl::OkStatus();
}

absl::Status AttendRunner::RunBatch(int worker_index, batching::Batch* batch) {
  for (auto& request : batch->requests) {
    const absl::Time start = clock_->Now();
    auto* work = static_cast<AttendWork*>(request->payload.get());
    work->queue_time = start - request->enqueue_time;
    absl::Status status;
    try {
      status = ComputeAttend(work->plan, *work->request, work->response);
    } catch (const std::exception& e) {
      status =
          absl::InternalError(absl::StrCat("attention failed: ", e.what()));
    }
    if (absl::IsInternal(status)) LOG(ERROR) << "Attend failed: " << status;
    work->compute_time = clock_->Now() - start;
    request->Complete(status);
  }
  return absl::OkStatus();
}

}  // namespace favor::service
