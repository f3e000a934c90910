// Edge checks of an Attend call: shapes, dtypes, byte lengths, kernel and
// projection, each failure INVALID_ARGUMENT naming the field and the limit.
// Byte lengths are compared with the declared shapes before anything is
// allocated; NaN and infinity are found later, by the worker (attend_runner),
// since finding them means reading every element.
#ifndef FAVOR_SERVER_SERVICE_ATTEND_VALIDATION_H_
#define FAVOR_SERVER_SERVICE_ATTEND_VALIDATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "favor/v1/favor.pb.h"
#include "server/attention/kernel.h"

namespace favor::service {

struct AttendLimits {
  // Elements of any one tensor (Q, K, V, the output, the projection).
  int64_t max_tensor_elements = int64_t{1} << 28;
  // m, rows of the projection.
  int64_t max_random_features = 65536;
};

// What a valid AttendRequest asks for.
struct AttendPlan {
  attention::Kernel kernel = attention::Kernel::kFavorPositive;
  int64_t num_random_features = 256;  // m, resolved (0 means 256)
  int64_t batch = 0, heads = 0, query_length = 0, key_length = 0;
  int64_t head_dim = 0, value_dim = 0;
  // What the Attend batcher counts: batch × (query_length + key_length).
  int64_t cost_tokens = 0;
};

absl::StatusOr<AttendPlan> ValidateAttendRequest(
    const v1::AttendRequest& request, const AttendLimits& limits);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_ATTEND_VALIDATION_H_
