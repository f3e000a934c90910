#include "server/service/attend_runner.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <exception>
#include <string>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/attention/attention.h"
#include "server/attention/device.h"
#include "server/attention/torch_status.h"
#include "server/common/status_macros.h"
#include "server/service/attend_inputs.h"

namespace favor::service {
namespace {

// The output, in the request's dtype, copied to the host and into `tensor`.
void WriteOutput(const at::Tensor& output, v1::Dtype dtype,
                 v1::Tensor* tensor) {
  const at::Tensor typed =
      output.to(ScalarTypeOf(dtype)).to(at::kCPU).contiguous();
  tensor->clear_shape();
  for (int64_t dim : typed.sizes()) tensor->add_shape(dim);
  tensor->set_dtype(dtype);
  tensor->mutable_data()->assign(static_cast<const char*>(typed.data_ptr()),
                                 typed.numel() * typed.element_size());
}

absl::Status Compute(const AttendPlan& plan, const v1::AttendRequest& request,
                     c10::Device device, v1::AttendResponse* response) {
  c10::InferenceMode inference_mode;
  ASSIGN_OR_RETURN(const AttendInputs in,
                   PlaceAttendInputs(plan, request, device));
  attention::AttentionOptions options;
  options.kernel = plan.kernel;
  options.causal = request.causal();
  ASSIGN_OR_RETURN(const at::Tensor output,
                   attention::Attend(in.query, in.key, in.value, in.projection,
                                     in.key_padding_mask, options));
  // Finite inputs can still overflow float32 in their scores (|q·k| near
  // 3e38): an answer of NaN or infinity would be wrong, not a result.
  if (!at::isfinite(output).all().item<bool>()) {
    return absl::InvalidArgumentError(
        "the attention of these inputs is not finite in float32: their "
        "scores overflow (|q|·|k| is near 3e38); scale the query or key "
        "down");
  }
  WriteOutput(output, request.query().dtype(), response->mutable_output());
  return absl::OkStatus();
}

}  // namespace

absl::Status ComputeAttend(const AttendPlan& plan,
                           const v1::AttendRequest& request,
                           absl::string_view device,
                           v1::AttendResponse* response) {
  ASSIGN_OR_RETURN(const c10::Device on, attention::ParseDevice(device));
  RETURN_IF_ERROR(torch_status::Guarded(
      "attention", [&] { return Compute(plan, request, on, response); }));
  response->set_kernel(std::string(attention::KernelName(plan.kernel)));
  response->set_num_features(
      plan.kernel == attention::Kernel::kSoftmaxExact
          ? 0
          : attention::FeatureCount(plan.kernel, plan.num_random_features,
                                    plan.head_dim));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AttendRunner>> AttendRunner::Create(
    batching::Clock* clock, const std::string& device) {
  RETURN_IF_ERROR(attention::ParseDevice(device).status());
  return std::unique_ptr<AttendRunner>(new AttendRunner(clock, device));
}

absl::Status AttendRunner::RunJobs(
    int /*worker_index*/, absl::Span<batching::Job<AttendWork>* const> jobs) {
  for (batching::Job<AttendWork>* job : jobs) {
    const absl::Time start = clock_->Now();
    AttendWork& work = job->work();
    work.queue_time = start - job->enqueue_time;
    absl::Status status;
    try {
      status = ComputeAttend(work.plan, *work.request, device_, work.response);
    } catch (const std::exception& e) {
      status =
          absl::InternalError(absl::StrCat("attention failed: ", e.what()));
    }
    if (absl::IsInternal(status)) LOG(ERROR) << "Attend failed: " << status;
    work.compute_time = clock_->Now() - start;
    job->Complete(status);
  }
  return absl::OkStatus();
}

}  // namespace favor::service
