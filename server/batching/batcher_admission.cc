// The Batcher's admission (batcher.h, Enqueue): the checks a request
// passes before it is queued, the queue's room and the memory budget's, and
// the retry hints of refusals.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/batching/batcher.h"
#include "server/batching/retry_hint.h"
#include "server/common/status_macros.h"

namespace favor::batching {

absl::Status Batcher::Enqueue(std::unique_ptr<Request> request) {
  CHECK(request != nullptr) << "Batcher::Enqueue: null request";
  absl::Status status;
  if (options_.admission_hook_for_testing) {
    status = options_.admission_hook_for_testing(*request);
  }
  if (status.ok()) status = CheckRequest(*request);
  if (status.ok()) status = Admit(&request);
  if (!status.ok()) request->Complete(status);
  return status;
}

// Checks that need no lock: the request's own fields against the options.
absl::Status Batcher::CheckRequest(const Request& request) const {
  if (request.num_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request num_tokens must be >= 1, got ", request.num_tokens));
  }
  if (request.num_tokens > options_.max_queue_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request of ", request.num_tokens, " tokens exceeds max_queue_tokens=",
        options_.max_queue_tokens, " of model '", options_.model_name, "'"));
  }
  if (request.num_tokens > options_.max_batch_tokens &&
      !options_.run_oversize_alone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request of ", request.num_tokens, " tokens exceeds max_batch_tokens=",
        options_.max_batch_tokens, " of model '", options_.model_name, "'"));
  }
  if (request.IsCancelled()) {
    return absl::CancelledError("request cancelled before it was queued");
  }
  if (request.deadline <= clock_->Now()) {
    return absl::DeadlineExceededError(
        "deadline passed before the request was queued");
  }
  return absl::OkStatus();
}

// A request that does not fit in the memory budget's room for batches
// even alone, which no release of a batch can change. With the weights of
// retired revisions back it would: a retry hint, since they are freed once
// those revisions' calls finish (a request never waits for them in the
// queue, where it would hold up every request behind it, and could wait on
// its own revision's weights). Otherwise no hint: retrying cannot help.
absl::Status Batcher::CheckMemory(const Request& request) const {
  const MemoryBudget* budget = options_.memory_budget;
  if (budget == nullptr) return absl::OkStatus();
  const int64_t needed =
      request.memory_bytes + options_.batch_memory_overhead_bytes;
  const int64_t capacity = budget->batch_capacity_bytes();
  if (needed <= capacity) return absl::OkStatus();
  const std::string what = absl::StrCat(
      "request of ", request.num_tokens, " tokens needs an estimated ", needed,
      " bytes of memory on model '", options_.model_name,
      "'; the server's memory budget (max_memory_bytes=", budget->max_bytes(),
      ") leaves ", capacity, " bytes for batches beside ",
      budget->resident_bytes(), " resident");
  const int64_t retiring = budget->retiring_bytes();
  if (needed <= capacity + retiring) {
    return ResourceExhaustedWithRetry(
        absl::StrCat(what, ", of which ", retiring,
                     " are weights of replaced revisions, freed once their "
                     "calls finish"),
        EstimateRetryAfter(1));
  }
  return absl::ResourceExhaustedError(
      absl::StrCat(what, "; it can never run here"));
}

// On OK, moves `*request` into the queue; otherwise leaves it with the caller.
absl::Status Batcher::Admit(std::unique_ptr<Request>* request) {
  absl::MutexLock lock(&mu_);
  if (draining_) {
    return absl::UnavailableError(
        absl::StrCat("model '", options_.model_name, "' is shutting down"));
  }
  // A request that can never run is told so before it is told to retry.
  RETURN_IF_ERROR(CheckMemory(**request));
  RETURN_IF_ERROR(CheckRoom((*request)->num_tokens));
  (*request)->enqueue_time = clock_->Now();
  observer_->OnEnqueued(**request);
  queues_.Push(std::move(*request));
  former_wake_ = true;
  return absl::OkStatus();
}

absl::Status Batcher::CheckRoom(int64_t num_tokens) const {
  const int64_t num_queued = queues_.num_requests();
  if (num_queued >= options_.max_queue_requests) {
    // The next batch to leave the queue makes room for one request.
    return ResourceExhaustedWithRetry(
        absl::StrCat("queue of model '", options_.model_name, "' is full: ",
                     num_queued, " requests queued (max_queue_requests=",
                     options_.max_queue_requests, ")"),
        EstimateRetryAfter(1));
  }
  const int64_t queued_tokens = queues_.num_tokens();
  const int64_t excess = queued_tokens + num_tokens - options_.max_queue_tokens;
  if (excess > 0) {
    const int64_t batches =
        (excess + options_.max_batch_tokens - 1) / options_.max_batch_tokens;
    return ResourceExhaustedWithRetry(
        absl::StrCat(
            "queue of model '", options_.model_name,
            "' is full: ", queued_tokens, " tokens queued + ", num_tokens,
            " requested > max_queue_tokens=", options_.max_queue_tokens),
        EstimateRetryAfter(batches));
  }
  return absl::OkStatus();
}

// How long until `batches_to_wait` batches have left the queue, from the
// measured compute time per batch and the number of workers. Before any
// measurement, a batch that has been computing longer than the guess is the
// better estimate (a first long input would otherwise be hinted at
// max_queue_delay, and obeying clients would retry in a tight loop).
absl::Duration Batcher::EstimateRetryAfter(int64_t batches_to_wait) const {
  absl::Duration per_batch = batch_duration_estimate_;
  if (!batch_duration_measured_) {
    const absl::Time now = clock_->Now();
    for (const absl::Time started : compute_started_) {
      if (started < now) per_batch = std::max(per_batch, now - started);
    }
  }
  const absl::Duration wait =
      per_batch * batches_to_wait / options_.num_workers;
  return std::max(wait, kMinRetryAfter);
}

void Batcher::NotifyCancelled() {
  absl::MutexLock lock(&mu_);
  former_wake_ = true;
}

}  // namespace favor::batching
