#include "server/service/attend_validation.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/status_macros.h"
#include "server/service/tensor_codec.h"

namespace favor::service {
namespace {

constexpr int64_t kDefaultRandomFeatures = 256;

// Checks dtype, rank, dims and byte length of `tensor`, named `field`.
absl::Status CheckTensor(absl::string_view field, const v1::Tensor& tensor,
                         int rank, const AttendLimits& limits) {
  const int64_t width = BytesPerElement(tensor.dtype());
  if (width == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".dtype is ", v1::Dtype_Name(tensor.dtype()), " (",
        static_cast<int>(tensor.dtype()),
        "); must be DTYPE_FLOAT32, DTYPE_FLOAT16 or DTYPE_BFLOAT16"));
  }
  if (tensor.shape_size() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".shape has ", tensor.shape_size(),
                     " dimensions; must have ", rank));
  }
  int64_t elements = 1;
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = tensor.shape(i);
    if (dim < 1 || dim > limits.max_tensor_elements ||
        elements > limits.max_tensor_elements / dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shape [", absl::StrJoin(tensor.shape(), ", "),
          "]: each dimension must be >= 1 and the product at most ",
          limits.max_tensor_elements, " (max_tensor_elements)"));
    }
    elements *= dim;
  }
  if (static_cast<int64_t>(tensor.data().size()) != elements * width) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".data has ", tensor.data().size(), " bytes; shape [",
        absl::StrJoin(tensor.shape(), ", "), "] of ",
        v1::Dtype_Name(tensor.dtype()), " needs ", elements * width));
  }
  return absl::OkStatus();
}

absl::Status CheckQkv(const v1::AttendRequest& request, AttendPlan* plan) {
  const v1::Tensor& q = request.query();
  const v1::Tensor& k = request.key();
  const v1::Tensor& v = request.value();
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) {
    return absl::InvalidArgumentError(
        "query, key and value must have the same dtype");
  }
  for (int axis : {0, 1}) {
    if (k.shape(axis) != q.shape(axis) || v.shape(axis) != q.shape(axis)) {
      return absl::InvalidArgumentError(
          absl::StrCat("query, key and value must agree on shape[", axis, "] (",
                       axis == 0 ? "batch" : "heads", "); got ", q.shape(axis),
                       ", ", k.shape(axis), ", ", v.shape(axis)));
    }
  }
  if (k.shape(3) != q.shape(3)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key.shape[3] (head_dim) is ", k.shape(3),
                     "; must equal query's ", q.shape(3)));
  }
  if (v.shape(2) != k.shape(2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("value.shape[2] (key_length) is ", v.shape(2),
                     "; must equal key's ", k.shape(2)));
  }
  plan->batch = q.shape(0);
  plan->heads = q.shape(1);
  plan->query_length = q.shape(2);
  plan->key_length = k.shape(2);
  plan->head_dim = q.shape(3);
  plan->value_dim = v.shape(3);
  if (request.causal() && plan->query_length != plan->key_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("causal needs query_length == key_length; got ",
                     plan->query_length, " and ", plan->key_length));
  }
  return absl::OkStatus();
}

absl::Status CheckEnums(const v1::AttendRequest& request) {
  if (!v1::RandomFeatures_IsValid(request.random_features())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_features has unknown value ", request.random_features()));
  }
  if (!v1::RowNorm_IsValid(request.row_norm())) {
    return absl::InvalidArgumentError(
        absl::StrCat("row_norm has unknown value ", request.row_norm()));
  }
  if (!v1::Priority_IsValid(request.priority())) {
    return absl::InvalidArgumentError(
        absl::StrCat("priority has unknown value ", request.priority()));
  }
  return absl::OkStatus();
}

absl::Status CheckProjection(const v1::AttendRequest& request,
                             const AttendLimits& limits, AttendPlan* plan) {
  const int64_t m = request.num_random_features();
  if (m < 0 || m > limits.max_random_features) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_random_features is ", m, "; must be in [0, ",
                     limits.max_random_features, "] (0 means ",
                     kDefaultRandomFeatures, ")"));
  }
  plan->num_random_features = m == 0 ? kDefaultRandomFeatures : m;
  if (!request.has_projection_matrix()) return absl::OkStatus();
  const v1::Tensor& w = request.projection_matrix();
  RETURN_IF_ERROR(CheckTensor("projection_matrix", w, 2, limits));
  if (w.dtype() != v1::DTYPE_FLOAT32 || w.shape(1) != plan->head_dim ||
      (m != 0 && w.shape(0) != m) || w.shape(0) > limits.max_random_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "projection_matrix must be DTYPE_FLOAT32 of shape "
        "(num_random_features, head_dim) = (",
        m == 0 ? "any up to " : "", m == 0 ? limits.max_random_features : m,
        ", ", plan->head_dim, "); got ", v1::Dtype_Name(w.dtype()), " [",
        absl::StrJoin(w.shape(), ", "), "]"));
  }
  plan->num_random_features = w.shape(0);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AttendPlan> ValidateAttendRequest(
    const v1::AttendRequest& request, const AttendLimits& limits) {
  AttendPlan plan;
  RETURN_IF_ERROR(CheckTensor("query", request.query(), 4, limits));
  RETURN_IF_ERROR(CheckTensor("key", request.key(), 4, limits));
  RETURN_IF_ERROR(CheckTensor("value", request.value(), 4, limits));
  RETURN_IF_ERROR(CheckQkv(request, &plan));
  if (plan.batch * plan.heads * plan.query_length >
      limits.max_tensor_elements / plan.value_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the output (batch, heads, query_length, value_dim) would exceed ",
        limits.max_tensor_elements, " elements (max_tensor_elements)"));
  }
  const absl::string_view kernel_name =
      request.kernel().empty() ? absl::string_view("favor+")
                               : absl::string_view(request.kernel());
  absl::StatusOr<attention::Kernel> kernel =
      attention::ParseKernel(kernel_name);
  if (!kernel.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel: ", kernel.status().message()));
  }
  plan.kernel = *kernel;
  RETURN_IF_ERROR(CheckEnums(request));
  RETURN_IF_ERROR(CheckProjection(request, limits, &plan));
  if (request.key_padding_mask_size() != 0 &&
      request.key_padding_mask_size() != plan.batch * plan.key_length) {
    return absl::InvalidArgumentError(
        absl::StrCat("key_padding_mask has ", request.key_padding_mask_size(),
                     " values; must be empty or batch * key_length = ",
                     plan.batch * plan.key_length));
  }
  plan.cost_tokens = plan.batch * (plan.query_length + plan.key_length);
  return plan;
}

}  // namespace favor::service
