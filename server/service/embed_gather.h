// Collects the answers of one Embed call's inputs, each its own
// batching::Request, and answers the call once the last one is in. The
// first failure wins: it becomes the call's status, sets the call's
// CancellationFlag and wakes the batcher, so that the call's other queued
// inputs are dropped rather than computed for nothing.
//
// Thread-safe: inputs are answered on whichever threads complete their
// requests.
#ifndef FAVOR_SERVER_SERVICE_EMBED_GATHER_H_
#define FAVOR_SERVER_SERVICE_EMBED_GATHER_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "favor/v1/favor.pb.h"
#include "server/batching/batcher.h"
#include "server/batching/request.h"
#include "server/service/embed_runner.h"
#include "server/service/embed_validation.h"

namespace favor::service {

class EmbedGather {
 public:
  // `response` holds one Embedding per input, to be written by InputDone;
  // it and `batcher` must outlive the gather. `done` runs exactly once,
  // after `num_inputs` inputs are accounted for (by InputDone or Release).
  // `dim` is the model's embedding_dim.
  EmbedGather(absl::AnyInvocable<void(absl::Status)> done,
              std::shared_ptr<batching::CancellationFlag> cancellation,
              batching::Batcher* batcher, v1::EmbedResponse* response,
              int num_inputs, const ResolvedEmbedOptions& options, int64_t dim);

  // Input `index` was answered with `status`; on OK its result, in `work`,
  // is written into the response (unless an earlier input failed), cut to
  // the call's dimensions and normalised as it asks (output_vectors.h).
  void InputDone(int index, const EmbedWork& work, const absl::Status& status);

  // `count` inputs will never be answered (an earlier one was refused and
  // the rest were never enqueued); 0 does nothing.
  void Release(int count);

  // A failure known before its input is answered (a failed window of a
  // chunked input): it becomes the call's status unless an earlier failure
  // did, and the call's queued work is dropped now (its cancellation flag,
  // and a wake-up of the batcher), as the first failed input does. The
  // status is recorded first, so that the work dropped, answered CANCELLED,
  // cannot answer the call with its cancellation instead.
  void Fail(const absl::Status& status);

 private:
  void CancelTheRest();
  void Write(int index, const EmbedWork& work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::AnyInvocable<void(absl::Status)> done_;
  const std::shared_ptr<batching::CancellationFlag> cancellation_;
  batching::Batcher* const batcher_;
  v1::EmbedResponse* const response_;
  const ResolvedEmbedOptions options_;
  const int64_t dim_;
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int remaining_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_GATHER_H_
