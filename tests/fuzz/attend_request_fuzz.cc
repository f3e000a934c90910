// Fuzz target: an Attend request as the bytes gRPC hands the service,
// parsed as favor.v1.AttendRequest and validated as FavorService does
// (server/service/attend_validation.h) to a status. An accepted request's
// plan must agree with its tensors: each tensor holds exactly its shape's
// elements, the shapes match the plan, and the plan stays within the limits.
// Structure-aware (proto_mutator.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "favor/v1/favor.pb.h"
#include "server/service/attend_validation.h"
#include "server/service/tensor_codec.h"
#include "tests/fuzz/proto_mutator.h"

FAVOR_FUZZ_PROTO_MUTATOR(favor::v1::AttendRequest)

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// The tensor holds `dims` (as shaped) in its bytes.
void CheckTensor(const favor::v1::Tensor& tensor,
                 std::initializer_list<int64_t> dims, int64_t max_elements) {
  Require(tensor.shape_size() == static_cast<int>(dims.size()));
  int64_t elements = 1;
  int i = 0;
  for (int64_t dim : dims) {
    Require(dim >= 1 && tensor.shape(i++) == dim);
    elements *= dim;
  }
  Require(elements <= max_elements);
  Require(static_cast<int64_t>(tensor.data().size()) ==
          elements * favor::service::BytesPerElement(tensor.dtype()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  favor::v1::AttendRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  favor::service::AttendLimits limits;
  limits.max_tensor_elements = 1 << 16;
  limits.max_random_features = 1024;
  auto plan = favor::service::ValidateAttendRequest(request, limits);
  if (!plan.ok()) return 0;
  const int64_t max = limits.max_tensor_elements;
  CheckTensor(request.query(),
              {plan->batch, plan->heads, plan->query_length, plan->head_dim},
              max);
  CheckTensor(request.key(),
              {plan->batch, plan->heads, plan->key_length, plan->head_dim},
              max);
  CheckTensor(request.value(),
              {plan->batch, plan->heads, plan->key_length, plan->value_dim},
              max);
  Require(plan->num_random_features >= 1 &&
          plan->num_random_features <= limits.max_random_features);
  if (request.has_projection_matrix()) {
    CheckTensor(request.projection_matrix(),
                {plan->num_random_features, plan->head_dim}, max);
  }
  Require(request.key_padding_mask_size() == 0 ||
          request.key_padding_mask_size() == plan->batch * plan->key_length);
  Require(plan->cost_tokens ==
          plan->batch * (plan->query_length + plan->key_length));
  return 0;
}
