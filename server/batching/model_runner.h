// What the batcher hands a formed batch to: the model, on one device.
//
// The batcher knows requests only by their cost; a ModelRunner knows what
// they carry (a JobRunner, job.h, as typed Jobs). The real runners live in
// server/service: EmbedRunner
// (embed_runner.h) packs the batch's token ids and runs the model's encoder,
// AttendRunner (attend_runner.h) runs the attention library; tests use a
// fake.
#ifndef FAVOR_SERVER_BATCHING_MODEL_RUNNER_H_
#define FAVOR_SERVER_BATCHING_MODEL_RUNNER_H_

#include "absl/status/status.h"
#include "server/batching/batch.h"

namespace favor::batching {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  // Computes every request of `batch` on the device numbered `worker_index`
  // (0 .. Options::num_workers - 1) and writes each result where its
  // request's owner reads it (a Job's work). Called on that device's worker
  // thread, one batch at a time per worker, so with several workers it is
  // called concurrently.
  //
  // Completion: the runner may complete requests itself (Request::Complete,
  // e.g. to fail one request of the batch), or move a request out of
  // `batch->requests` to complete it later; after RunBatch returns, the
  // batcher completes every request still in the batch and uncompleted with
  // the returned status (OK: the result is written). So a runner
  // must not complete, after returning, a request it left in the batch. A
  // runner that throws breaks this contract: catch exceptions inside (e.g.
  // c10::Error) and return them as a Status (INTERNAL).
  virtual absl::Status RunBatch(int worker_index, Batch* batch) = 0;
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_MODEL_RUNNER_H_
