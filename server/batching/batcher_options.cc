// Batcher::Options: their checks, and the packing policy they make.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/batching/batcher.h"
#include "server/common/status_macros.h"

namespace favor::batching {
namespace {

absl::Status CheckAtLeast(absl::string_view name, int64_t value,
                          int64_t minimum) {
  if (value >= minimum) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "Batcher::Options::", name, " must be >= ", minimum, ", got ", value));
}

}  // namespace

absl::Status Batcher::ValidateOptions(const Options& options) {
  RETURN_IF_ERROR(
      CheckAtLeast("max_queue_requests", options.max_queue_requests, 1));
  RETURN_IF_ERROR(
      CheckAtLeast("max_queue_tokens", options.max_queue_tokens, 1));
  RETURN_IF_ERROR(
      CheckAtLeast("max_batch_tokens", options.max_batch_tokens, 1));
  RETURN_IF_ERROR(
      CheckAtLeast("max_batch_requests", options.max_batch_requests, 1));
  RETURN_IF_ERROR(CheckAtLeast("max_consecutive_high_batches",
                               options.max_consecutive_high_batches, 1));
  RETURN_IF_ERROR(CheckAtLeast("num_workers", options.num_workers, 1));
  RETURN_IF_ERROR(CheckAtLeast("batch_memory_overhead_bytes",
                               options.batch_memory_overhead_bytes, 0));
  if (options.max_queue_delay < absl::ZeroDuration() ||
      options.max_queue_delay == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Batcher::Options::max_queue_delay must be finite and "
                     ">= 0, got ",
                     absl::FormatDuration(options.max_queue_delay)));
  }
  if (options.max_enqueue_group_wait < absl::ZeroDuration() ||
      options.max_enqueue_group_wait == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Batcher::Options::max_enqueue_group_wait must be finite and >= 0, "
        "got ",
        absl::FormatDuration(options.max_enqueue_group_wait)));
  }
  if (options.max_request_age <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Batcher::Options::max_request_age must be > 0, got ",
                     absl::FormatDuration(options.max_request_age)));
  }
  return absl::OkStatus();
}

PackingPolicy Batcher::PackingPolicyOf(const Options& options) {
  PackingPolicy policy;
  policy.max_batch_tokens = options.max_batch_tokens;
  policy.max_batch_requests = options.max_batch_requests;
  policy.max_queue_delay = options.max_queue_delay;
  policy.max_request_age = options.max_request_age;
  policy.max_consecutive_high_batches = options.max_consecutive_high_batches;
  return policy;
}

}  // namespace favor::batching
