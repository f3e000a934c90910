// Typed work for a Batcher. The Batcher schedules Requests by their cost and
// never looks inside; what a runner computes travels as a Job<Work>, a
// Request that carries its Work:
//
//   - a JobRunner<Work> sees each batch as the Jobs it holds, typed;
//   - a JobBatcher<Work> is a Batcher run by a JobRunner<Work> that takes
//     Job<Work>s only.
//
// So a runner reads its work as the type it was enqueued with, and handing
// one model's runner another kind of work does not compile. Header-only:
// the Batcher itself stays untyped (batcher.h), so its tests run plain
// Requests through a fake ModelRunner.
#ifndef FAVOR_SERVER_BATCHING_JOB_H_
#define FAVOR_SERVER_BATCHING_JOB_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/batching/batch.h"
#include "server/batching/batcher.h"
#include "server/batching/clock.h"
#include "server/batching/model_runner.h"
#include "server/batching/request.h"
#include "server/common/status_macros.h"

namespace favor::batching {

template <typename Work>
class Job final : public Request {
 public:
  // `work` is what the runner reads its input from and writes its result
  // into; whoever reads the result when `done` runs keeps a reference too.
  Job(std::shared_ptr<Work> work, DoneCallback done)
      : Request(std::move(done)), work_(std::move(work)) {}

  Work& work() const { return *work_; }

 private:
  const std::shared_ptr<Work> work_;
};

template <typename Work>
class JobRunner : public ModelRunner {
 public:
  // ModelRunner::RunBatch, with the batch's requests as their Jobs, in the
  // batch's order: the runner may complete jobs itself; after it returns,
  // the batcher completes the others with the returned status (OK: the
  // result is in each job's work).
  virtual absl::Status RunJobs(int worker_index,
                               absl::Span<Job<Work>* const> jobs) = 0;

  // Hands RunJobs the batch's Jobs. A JobBatcher<Work> is the only Batcher
  // that runs a JobRunner<Work>, and it admits Job<Work>s only: the cast
  // holds by construction. (A test's fake may override this to record
  // batches without reading their work.)
  absl::Status RunBatch(int worker_index, Batch* batch) override {
    std::vector<Job<Work>*> jobs;
    jobs.reserve(batch->requests.size());
    for (const std::unique_ptr<Request>& request : batch->requests) {
      jobs.push_back(static_cast<Job<Work>*>(request.get()));
    }
    return RunJobs(worker_index, jobs);
  }
};

template <typename Work>
class JobBatcher {
 public:
  // Batcher::Create, with a runner of Work.
  static absl::StatusOr<std::unique_ptr<JobBatcher>> Create(
      const Batcher::Options& options, JobRunner<Work>* runner,
      Clock* clock = nullptr, BatcherObserver* observer = nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<Batcher> batcher,
                     Batcher::Create(options, runner, clock, observer));
    return std::unique_ptr<JobBatcher>(new JobBatcher(std::move(batcher)));
  }

  // Batcher::Enqueue's contract.
  absl::Status Enqueue(std::unique_ptr<Job<Work>> job) {
    return batcher_->Enqueue(std::move(job));
  }

  // The batcher, for everything but enqueueing (groups, cancellation, queue
  // sizes, options, shutdown); shared so that calls can watch it weakly.
  const std::shared_ptr<Batcher>& batcher() const { return batcher_; }

 private:
  explicit JobBatcher(std::unique_ptr<Batcher> batcher)
      : batcher_(std::move(batcher)) {}

  const std::shared_ptr<Batcher> batcher_;
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_JOB_H_
