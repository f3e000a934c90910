// Dynamic batching for one model: a bounded queue, a batch former, and one
// worker per device.
//
// Requests enter through Enqueue(), which never blocks: a request that does
// not fit the queue is answered RESOURCE_EXHAUSTED at once, with a retry
// hint (retry_hint.h). A batch former thread turns queued requests into
// batches and hands them to the workers; each worker runs one batch at a
// time on its device through the ModelRunner.
//
// How a batch is formed (implemented by batch_packing.h, whose functions
// the batcher calls under its lock). A batch is formed only for a worker
// that waits for one, and only when it is due: at once when max_queue_delay
// is zero (the default), while draining, or when the queue holds at least a
// full batch (max_batch_tokens tokens or max_batch_requests requests);
// otherwise once its oldest request has waited max_queue_delay. While a
// caller enqueues requests that belong together (EnqueueGroup), a partial
// batch also waits for the rest of them, briefly. It starts with a leader:
//   1. a request queued for max_request_age or longer (the oldest such) leads
//      whatever its priority (the age bound);
//   2. otherwise the oldest high-priority request leads, unless
//      max_consecutive_high_batches batches in a row were already led by
//      high-priority requests while normal ones waited: then the oldest
//      normal request leads (so high priority never starves normal);
//   3. otherwise the oldest normal request.
// The batch is then filled, up to max_batch_tokens and max_batch_requests,
// first-fit in this order: requests past the age bound (oldest first), then
// high-priority, then normal requests, each in arrival order. A request that
// does not fit is skipped, not waited for, so shorter requests are packed
// around a long one; the skipped request keeps its place and leads a later
// batch once it is the oldest, so no request is skipped forever. A request
// larger than max_batch_tokens runs alone (or is refused; see
// run_oversize_alone).
//
// No batch is formed ahead of the workers. What arrives while they are
// all busy stays queued, where it counts against the queue limits and can
// still expire or be cancelled, and joins the batch formed when a worker
// frees: a batch formed ahead would be closed to the callers that arrive
// during the running one (16 closed-loop callers of one short text each
// made batches of 5.4-5.7 that way, 8.1-8.3 now, with 9-11% more
// throughput and 9-10% lower median latency; docs/performance.md).
//
// Deadlines, cancellation, shutdown. A queued request whose deadline passes
// is answered DEADLINE_EXCEEDED at that moment and never reaches the runner;
// a cancelled one (its CancellationFlag set) is answered CANCELLED and
// dropped, at once if NotifyCancelled() is called, else when the former next
// looks at the queue (at the latest, when a worker frees). A formed batch
// runs as formed. Shutdown() stops admission
// (UNAVAILABLE), runs what is queued without waiting for company, and
// answers UNAVAILABLE what has not started by the drain timeout.
//
// Memory. With a MemoryBudget (Options::memory_budget), a batch is formed
// only when its estimated peak, its requests' memory_bytes plus
// batch_memory_overhead_bytes, fits in what the budget has left beside the
// batches in flight (formed or running, of every batcher sharing the
// budget): the estimate is reserved when the batch is formed and released
// when it is done, answered OK or not. The leader must fit: when it does
// not, no batch is formed and nothing overtakes it until enough is released
// (so a stream of small requests cannot starve a large one; while it waits,
// the requests behind it wait too). The rest of the batch is first fit
// within the room left. A request that does not fit alone (its bytes plus
// the overhead above the budget's batch capacity, which only weights
// change) is refused with RESOURCE_EXHAUSTED naming the budget and the
// estimate: at Enqueue, or as a leader when a model reload has shrunk the
// capacity since it was queued (so it never waits for room that no batch
// will release). The status carries a retry hint when the weights of
// retired revisions, freed once their calls finish, would make room
// (MemoryBudget::retiring_bytes), and none otherwise. The others wait in
// the queue, within their deadlines (DEADLINE_EXCEEDED when the budget
// never frees in time).
//
// Worst cases. Each pass of the former scans the queue (O(queued requests),
// bounded by max_queue_requests). A request waits at most max_queue_delay for
// company (none by default); under overload it waits for the batches ahead
// of it, of which the age bound and the priority share bound how many can
// overtake it.
//
// Thread-safe. Requests are answered through Request::Complete(), exactly
// once each (see request.h).
#ifndef FAVOR_SERVER_BATCHING_BATCHER_H_
#define FAVOR_SERVER_BATCHING_BATCHER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/batching/batch.h"
#include "server/batching/batch_packing.h"
#include "server/batching/batcher_observer.h"
#include "server/batching/clock.h"
#include "server/batching/memory_budget.h"
#include "server/batching/model_runner.h"
#include "server/batching/request.h"
#include "server/batching/request_queues.h"

namespace favor::batching {

class Batcher {
 public:
  struct Options {
    // Names the model in status messages and logs.
    std::string model_name;

    // Queue limits, counted over requests waiting to be batched (not those
    // in a formed or running batch). A request that would take the queue
    // past either limit is refused at once with RESOURCE_EXHAUSTED, whose
    // message names the limit and carries a retry hint; Enqueue() never
    // waits for room. A request larger than max_queue_tokens could never be
    // admitted and is refused with INVALID_ARGUMENT instead.
    int64_t max_queue_requests = 1024;
    int64_t max_queue_tokens = int64_t{1} << 20;

    // Batch limits: a batch never holds more tokens or requests than this
    // (except one oversize request alone). Reaching either limit with the
    // queued requests makes a batch due at once, without max_queue_delay.
    int64_t max_batch_tokens = 16384;
    int64_t max_batch_requests = 64;

    // How long a worker with nothing to run waits for company: a batch
    // short of both limits is formed once its oldest request has waited
    // this long (Triton's max_queue_delay). Zero: what is queued runs at
    // once, so a lone request is not held back (2 ms of a 6.6 ms 8-token
    // request). Either way, what arrives while every worker is busy waits
    // for one to free and then joins its batch.
    absl::Duration max_queue_delay = absl::ZeroDuration();

    // How long a worker with nothing to run waits, past the oldest queued
    // request, for the rest of an open EnqueueGroup (a call's inputs take a
    // microsecond or two each to enqueue, 1024 of them about 1 ms); a full
    // batch never waits. The bound keeps a slow or overlapping group from
    // holding an idle worker back. Zero: groups change nothing.
    absl::Duration max_enqueue_group_wait = absl::Milliseconds(5);

    // The age bound: a request queued this long leads the next batch ahead
    // of any priority, and is packed ahead of younger requests.
    absl::Duration max_request_age = absl::Milliseconds(500);

    // The priority share: at most this many batches in a row are led by
    // high-priority requests while normal ones wait; the next is led by the
    // oldest normal request. At least 1.
    int max_consecutive_high_batches = 4;

    // A request of more than max_batch_tokens tokens (but at most
    // max_queue_tokens) runs alone in a batch of its own when true; when
    // false it is refused with INVALID_ARGUMENT naming max_batch_tokens.
    bool run_oversize_alone = true;

    // Worker threads, one per device; worker i runs batches on device i.
    int num_workers = 1;

    // The process's memory budget, shared with the other batchers (see
    // Memory above); null: batches are not limited by memory. Must outlive
    // the Batcher.
    MemoryBudget* memory_budget = nullptr;
    // Bytes a batch needs whatever it holds (the model's per-thread work
    // buffers), counted once per batch on top of its requests' memory_bytes.
    int64_t batch_memory_overhead_bytes = 0;

    // For tests only: empty (the default, and always in production) costs
    // one branch per Enqueue. When set, Enqueue calls it first, on the
    // calling thread and without the batcher's lock, with the request about
    // to be checked: a status other than OK refuses the request with that
    // status, exactly as a failed admission check would (completed before
    // Enqueue returns). It may also change the request (e.g. move its
    // deadline into the past, so that the real check refuses it). Tests use
    // it to refuse the k-th part of a call (a window, an input of an
    // EnqueueGroup, a stream message) with a drain's, a deadline's or a
    // full queue's status. Called concurrently when Enqueue is.
    std::function<absl::Status(Request&)> admission_hook_for_testing;
  };

  // Starts the former and worker threads. `runner` must outlive the
  // Batcher; so must `clock` (null: RealClock) and `observer` (null:
  // BatcherObserver::Noop()).
  // INVALID_ARGUMENT names the offending option.
  static absl::StatusOr<std::unique_ptr<Batcher>> Create(
      const Options& options, ModelRunner* runner, Clock* clock = nullptr,
      BatcherObserver* observer = nullptr);

  // Shutdown(absl::ZeroDuration()): queued requests are answered
  // UNAVAILABLE, running batches finish.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Takes ownership of `request` (not null) and guarantees it is completed
  // exactly once. Never blocks (beyond a short critical section). Returns OK
  // when it is queued (it is completed later, by the runner or with
  // DEADLINE_EXCEEDED, CANCELLED or UNAVAILABLE). Otherwise it has
  // already been completed with the returned status, before Enqueue()
  // returns and on the calling thread:
  //   INVALID_ARGUMENT   num_tokens < 1, or larger than the limits allow;
  //   CANCELLED          its flag was already set;
  //   DEADLINE_EXCEEDED  its deadline had already passed;
  //   RESOURCE_EXHAUSTED the queue is full (retry hint in the status), or
  //                      the request does not fit the memory budget (see
  //                      Memory);
  //   UNAVAILABLE        Shutdown() has started.
  // So a caller answers its call from the done callback only, and may use
  // the returned status for logs and metrics.
  absl::Status Enqueue(std::unique_ptr<Request> request);

  // Wakes the former to drop the queued requests whose CancellationFlag is
  // set, now rather than when it next looks at the queue (which frees their
  // place in the queue at once). Call after CancellationFlag::Cancel().
  void NotifyCancelled();

  // Held while a caller enqueues requests that belong together (a call's
  // inputs, one Enqueue() each): until it is destroyed, a worker with
  // nothing to run waits for the rest of them rather than taking those
  // enqueued so far, for at most Options::max_enqueue_group_wait past the
  // oldest queued request; a full batch is formed at once as ever. Groups
  // may overlap; the batcher must outlive its groups.
  class EnqueueGroup {
   public:
    explicit EnqueueGroup(Batcher* batcher);
    ~EnqueueGroup();
    EnqueueGroup(const EnqueueGroup&) = delete;
    EnqueueGroup& operator=(const EnqueueGroup&) = delete;

   private:
    Batcher* const batcher_;
  };

  // Stops admission, runs what is queued (batches are due at once), then
  // stops the threads; returns when every request has been answered.
  // Requests not started within `drain_timeout` (measured on the clock) are
  // answered UNAVAILABLE; running batches are never interrupted. May be
  // called more than once (the earliest drain deadline wins); must not be
  // called from the runner or a done callback.
  void Shutdown(absl::Duration drain_timeout);

  // For metrics (queue depth).
  int64_t NumQueuedRequests() const;
  int64_t NumQueuedTokens() const;

  const Options& options() const { return options_; }

  // For tests: blocks until the batcher can make no progress without an
  // outside event (an Enqueue, a cancellation, the clock reaching the
  // former's wake-up time, or a held runner returning): the former waits,
  // no formed batch waits for an idle worker, exactly `workers_in_runner`
  // workers are inside ModelRunner::RunBatch (those a test holds there, e.g.
  // with a fake runner that blocks) and the others wait for a batch, having
  // answered everything they ran. Returns false after `real_timeout` of real
  // time without reaching that state.
  bool WaitUntilIdleForTesting(int workers_in_runner = 0,
                               absl::Duration real_timeout = absl::Seconds(30));

  // Implementation details follow.
 private:
  struct Dropped {
    std::unique_ptr<Request> request;
    absl::Status status;
  };

  // Retry hints are never shorter than this, so that a hint derived from a
  // fake clock or a very fast runner still tells a client to back off.
  static constexpr absl::Duration kMinRetryAfter = absl::Milliseconds(1);

  Batcher(const Options& options, ModelRunner* runner, Clock* clock,
          BatcherObserver* observer);
  // INVALID_ARGUMENT naming the first bad option (batcher_options.cc).
  static absl::Status ValidateOptions(const Options& options);
  static PackingPolicy PackingPolicyOf(const Options& options);
  void StartThreads();
  void JoinThreads();

  // Enqueue() steps (batcher_admission.cc).
  absl::Status CheckRequest(const Request& request) const;
  absl::Status CheckMemory(const Request& request) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Admit(std::unique_ptr<Request>* request);
  absl::Status CheckRoom(int64_t num_tokens) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration EstimateRetryAfter(int64_t batches_to_wait) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The former's loop and its steps, in order.
  void FormerLoop();
  void WaitForFormerWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time NextFormerWakeTime() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropUnrunnable(absl::Time now, std::vector<Dropped>* dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool BatchDue(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FormBatch(absl::Time now, std::vector<Dropped>* dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnMemoryReleased();
  absl::Time NextBatchTime() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The workers' loop and its steps.
  void WorkerLoop(int worker_index);
  std::optional<Batch> TakeReadyBatch();
  void RunBatch(int worker_index, Batch batch);
  void ReleaseMemory(const Batch& batch);
  void EnterRunner(int worker_index, absl::Time compute_start);
  void LeaveRunner(int worker_index, absl::Duration compute_duration);

  // Shared helpers.
  absl::Status UnrunnableStatus(const Request& request, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WorkerWaiting() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool ReadyOrFormerDone() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool Idle(int workers_in_runner) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void AnswerDropped(std::vector<Dropped> dropped);

  const Options options_;
  const PackingPolicy policy_;  // From options_.
  ModelRunner* const runner_;
  Clock* const clock_;
  BatcherObserver* const observer_;  // Never null.

  mutable absl::Mutex mu_;
  // Requests waiting to be batched.
  RequestQueues queues_ ABSL_GUARDED_BY(mu_);
  // Batches formed for idle workers, not yet taken (at most one per idle
  // worker).
  std::deque<Batch> ready_ ABSL_GUARDED_BY(mu_);
  // Batches in a row led by high priority while normal requests waited.
  int high_led_in_a_row_ ABSL_GUARDED_BY(mu_) = 0;
  // Set by anything the former must look at (an arrival, a cancellation, a
  // worker waiting for a batch, Shutdown); cleared by the former.
  bool former_wake_ ABSL_GUARDED_BY(mu_) = false;
  bool former_waiting_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time former_wake_time_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool former_done_ ABSL_GUARDED_BY(mu_) = false;
  // The leader did not fit in the memory budget: the former waits for an
  // event (a release among them) rather than for the batch's due time.
  bool memory_blocked_ ABSL_GUARDED_BY(mu_) = false;
  int idle_workers_ ABSL_GUARDED_BY(mu_) = 0;       // waiting for a batch
  int workers_in_runner_ ABSL_GUARDED_BY(mu_) = 0;  // inside RunBatch
  int open_enqueue_groups_ ABSL_GUARDED_BY(mu_) = 0;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time drain_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Moving average of compute time per batch, for retry hints; until the
  // first batch is measured, a guess (max_queue_delay) that a batch still
  // running overrules once it has run longer.
  absl::Duration batch_duration_estimate_ ABSL_GUARDED_BY(mu_);
  bool batch_duration_measured_ ABSL_GUARDED_BY(mu_) = false;
  // Per worker: when its batch's compute started; InfiniteFuture when idle.
  std::vector<absl::Time> compute_started_ ABSL_GUARDED_BY(mu_);

  int memory_listener_id_ = -1;  // In options_.memory_budget, if any.

  absl::Mutex threads_mu_;  // Serialises JoinThreads().
  std::thread former_ ABSL_GUARDED_BY(threads_mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(threads_mu_);
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_BATCHER_H_
