#include "server/batching/batcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"

namespace favor::batching {
namespace {

// Weight of the newest batch in the compute-time moving average.
constexpr double kBatchDurationSmoothing = 0.25;

}  // namespace

absl::StatusOr<std::unique_ptr<Batcher>> Batcher::Create(
    const Options& options, ModelRunner* runner, Clock* clock,
    BatcherObserver* observer) {
  RETURN_IF_ERROR(ValidateOptions(options));
  if (runner == nullptr) {
    return absl::InvalidArgumentError("Batcher::Create: runner is null");
  }
  std::unique_ptr<Batcher> batcher(
      new Batcher(options, runner, clock != nullptr ? clock : RealClock::Get(),
                  observer != nullptr ? observer : BatcherObserver::Noop()));
  if (options.memory_budget != nullptr) {
    batcher->memory_listener_id_ = options.memory_budget->AddListener(
        [raw = batcher.get()] { raw->OnMemoryReleased(); });
  }
  batcher->StartThreads();
  return batcher;
}

Batcher::Batcher(const Options& options, ModelRunner* runner, Clock* clock,
                 BatcherObserver* observer)
    : options_(options),
      policy_(PackingPolicyOf(options)),
      runner_(runner),
      clock_(clock),
      observer_(observer),
      batch_duration_estimate_(
          std::max(options.max_queue_delay, kMinRetryAfter)),
      compute_started_(static_cast<size_t>(std::max(options.num_workers, 0)),
                       absl::InfiniteFuture()) {}

Batcher::~Batcher() {
  Shutdown(absl::ZeroDuration());
  if (options_.memory_budget != nullptr) {
    options_.memory_budget->RemoveListener(memory_listener_id_);
  }
}

void Batcher::StartThreads() {
  absl::MutexLock lock(&threads_mu_);
  former_ = std::thread([this] { FormerLoop(); });
  for (int i = 0; i < options_.num_workers; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

void Batcher::JoinThreads() {
  absl::MutexLock lock(&threads_mu_);
  if (former_.joinable()) former_.join();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void Batcher::Shutdown(absl::Duration drain_timeout) {
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    drain_deadline_ = std::min(drain_deadline_, clock_->Now() + drain_timeout);
    former_wake_ = true;
  }
  JoinThreads();
}

// ---------------------------------------------------------------------------
// The batch former.

void Batcher::FormerLoop() {
  bool done = false;
  while (!done) {
    std::vector<Dropped> dropped;
    {
      absl::MutexLock lock(&mu_);
      WaitForFormerWork();
      const absl::Time now = clock_->Now();
      DropUnrunnable(now, &dropped);
      if (BatchDue(now)) FormBatch(now, &dropped);
      done = draining_ && queues_.empty();
      former_done_ = done;
    }
    AnswerDropped(std::move(dropped));
  }
}

// Returns at once if something is due now; otherwise sleeps on the clock
// until the next thing falls due or someone sets `former_wake_`.
void Batcher::WaitForFormerWork() {
  const absl::Time wake_time = NextFormerWakeTime();
  if (!former_wake_ && wake_time > clock_->Now()) {
    former_waiting_ = true;
    former_wake_time_ = wake_time;
    clock_->AwaitWithDeadline(&mu_, absl::Condition(&former_wake_), wake_time);
    former_waiting_ = false;
  }
  former_wake_ = false;
  memory_blocked_ = false;  // Something happened: the leader may fit now.
}

// The earliest of: the drain deadline, a queued request's deadline, and the
// time the next batch falls due (only while a worker can take it).
absl::Time Batcher::NextFormerWakeTime() const {
  absl::Time wake_time = draining_ ? drain_deadline_ : absl::InfiniteFuture();
  wake_time = std::min(wake_time, queues_.EarliestDeadline());
  if (WorkerWaiting() && !memory_blocked_) {
    wake_time = std::min(wake_time, NextBatchTime());
  }
  return wake_time;
}

void Batcher::DropUnrunnable(absl::Time now, std::vector<Dropped>* dropped) {
  for (const Priority priority : {Priority::kHigh, Priority::kNormal}) {
    const RequestQueues::Queue& queue = queues_.queue(priority);
    for (auto it = queue.begin(); it != queue.end();) {
      absl::Status status = UnrunnableStatus(**it, now);
      if (status.ok()) {
        ++it;
        continue;
      }
      dropped->push_back({queues_.Take(priority, &it), std::move(status)});
    }
  }
}

bool Batcher::BatchDue(absl::Time now) const {
  return WorkerWaiting() && !queues_.empty() && NextBatchTime() <= now;
}

// Packs the next batch into ready_, within what the memory budget has left;
// with no room for its leader, forms nothing and waits for a release. A
// leader that no release can make room for (a reload took the room it was
// admitted with) is refused into `dropped` instead, and the next one looked
// at.
void Batcher::FormBatch(absl::Time now, std::vector<Dropped>* dropped) {
  MemoryBudget* budget = options_.memory_budget;
  if (budget == nullptr) {
    ready_.push_back(PackBatch(policy_, now, &queues_, &high_led_in_a_row_));
    return;
  }
  const Priority leader =
      ChooseLeader(queues_, policy_, now, high_led_in_a_row_);
  RequestQueues::Queue::const_iterator first = queues_.queue(leader).begin();
  absl::Status fits = CheckMemory(**first);
  if (!fits.ok()) {
    dropped->push_back({queues_.Take(leader, &first), std::move(fits)});
    former_wake_ = true;
    return;
  }
  Batch batch;
  // Packed under the budget's lock, so that what fits is still there when
  // reserved, whatever the other batchers do meanwhile.
  budget->Reserve([&](int64_t available_bytes) {
    mu_.AssertHeld();
    batch = PackBatch(policy_, now, &queues_, &high_led_in_a_row_,
                      available_bytes - options_.batch_memory_overhead_bytes);
    if (batch.requests.empty()) return int64_t{0};
    batch.reserved_memory_bytes =
        batch.memory_bytes + options_.batch_memory_overhead_bytes;
    return batch.reserved_memory_bytes;
  });
  memory_blocked_ = batch.requests.empty();
  if (!memory_blocked_) ready_.push_back(std::move(batch));
}

void Batcher::OnMemoryReleased() {
  absl::MutexLock lock(&mu_);
  former_wake_ = true;
}

// The packing policy's due time, except that a drain runs what is queued
// without waiting for company, and that a partial batch waits a little for
// the rest of an EnqueueGroup's requests.
absl::Time Batcher::NextBatchTime() const {
  if (queues_.empty()) return absl::InfiniteFuture();
  if (draining_) return absl::InfinitePast();
  const absl::Time due = BatchDueTime(queues_, policy_);
  if (open_enqueue_groups_ == 0 || due == absl::InfinitePast()) return due;
  return std::max(due, queues_.Oldest()->enqueue_time +
                       options_.max_enqueue_group_wait);
}

Batcher::EnqueueGroup::EnqueueGroup(Batcher* batcher) : batcher_(batcher) {
  absl::MutexLock lock(&batcher_->mu_);
  ++batcher_->open_enqueue_groups_;
}

Batcher::EnqueueGroup::~EnqueueGroup() {
  absl::MutexLock lock(&batcher_->mu_);
  --batcher_->open_enqueue_groups_;
  batcher_->former_wake_ = true;
}

// ---------------------------------------------------------------------------
// The workers.

void Batcher::WorkerLoop(int worker_index) {
  while (true) {
    std::optional<Batch> batch = TakeReadyBatch();
    if (!batch.has_value()) return;
    RunBatch(worker_index, *std::move(batch));
  }
}

// Waits for the batch formed for this worker (nullopt once the former is
// done and none is left). It was formed just now, from requests that could
// run then, so it runs as formed.
std::optional<Batch> Batcher::TakeReadyBatch() {
  absl::MutexLock lock(&mu_);
  ++idle_workers_;
  former_wake_ = true;  // A batch may be due for this worker.
  mu_.Await(absl::Condition(this, &Batcher::ReadyOrFormerDone));
  --idle_workers_;
  if (ready_.empty()) return std::nullopt;
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  return batch;
}

// Runs `batch`, then completes what the runner left uncompleted.
void Batcher::RunBatch(int worker_index, Batch batch) {
  const absl::Time start = clock_->Now();
  const int64_t num_requests = static_cast<int64_t>(batch.requests.size());
  const int64_t num_tokens = batch.num_tokens;
  for (const std::unique_ptr<Request>& request : batch.requests) {
    observer_->OnDequeued(*request, start - request->enqueue_time,
                          absl::StatusCode::kOk);
  }
  const absl::Time compute_start = clock_->Now();
  EnterRunner(worker_index, compute_start);
  const absl::Status status = runner_->RunBatch(worker_index, &batch);
  const absl::Duration compute_duration = clock_->Now() - compute_start;
  LeaveRunner(worker_index, compute_duration);
  if (!status.ok()) {
    LOG(WARNING) << "model '" << options_.model_name << "': batch of "
                 << num_requests << " requests failed on worker "
                 << worker_index << ": " << status;
  }
  // Reported before the answers: a caller holding its answer finds its
  // batch (and its tokens) in the metrics already.
  observer_->OnBatchRun(worker_index, num_requests, num_tokens,
                        compute_duration, status);
  for (std::unique_ptr<Request>& request : batch.requests) {
    if (request != nullptr && !request->completed()) request->Complete(status);
  }
  ReleaseMemory(batch);  // after the answers, which may hold results
}

void Batcher::ReleaseMemory(const Batch& batch) {
  if (options_.memory_budget == nullptr) return;
  options_.memory_budget->Release(batch.reserved_memory_bytes);
}

void Batcher::EnterRunner(int worker_index, absl::Time compute_start) {
  absl::MutexLock lock(&mu_);
  ++workers_in_runner_;
  compute_started_[static_cast<size_t>(worker_index)] = compute_start;
}

// Also feeds the compute time into the retry-hint estimate: the first
// measurement replaces the guess, later ones are averaged in.
void Batcher::LeaveRunner(int worker_index, absl::Duration compute_duration) {
  absl::MutexLock lock(&mu_);
  --workers_in_runner_;
  compute_started_[static_cast<size_t>(worker_index)] = absl::InfiniteFuture();
  if (compute_duration <= absl::ZeroDuration()) return;
  batch_duration_estimate_ =
      !batch_duration_measured_
          ? compute_duration
          : batch_duration_estimate_ * (1 - kBatchDurationSmoothing) +
                compute_duration * kBatchDurationSmoothing;
  batch_duration_measured_ = true;
}

// ---------------------------------------------------------------------------
// Shared helpers.

// Why `request` must not run now, or OK.
absl::Status Batcher::UnrunnableStatus(const Request& request,
                                       absl::Time now) const {
  if (request.IsCancelled()) {
    return absl::CancelledError("request cancelled while queued");
  }
  if (request.deadline <= now) {
    return absl::DeadlineExceededError(
        absl::StrCat("deadline passed after ",
                     absl::FormatDuration(now - request.enqueue_time),
                     " in the queue of model '", options_.model_name, "'"));
  }
  if (draining_ && drain_deadline_ <= now) {
    return absl::UnavailableError(
        absl::StrCat("model '", options_.model_name,
                     "' shut down before the request could run"));
  }
  return absl::OkStatus();
}

bool Batcher::WorkerWaiting() const {
  return ready_.size() < static_cast<size_t>(idle_workers_);
}

bool Batcher::ReadyOrFormerDone() const {
  return !ready_.empty() || former_done_;
}

bool Batcher::Idle(int workers_in_runner) const {
  return former_waiting_ && !former_wake_ &&
         clock_->Now() < former_wake_time_ &&
         workers_in_runner_ == workers_in_runner &&
         idle_workers_ == options_.num_workers - workers_in_runner &&
         (ready_.empty() || idle_workers_ == 0);
}

void Batcher::AnswerDropped(std::vector<Dropped> dropped) {
  if (dropped.empty()) return;
  const absl::Time now = clock_->Now();
  for (Dropped& item : dropped) {
    observer_->OnDequeued(*item.request, now - item.request->enqueue_time,
                          item.status.code());
    item.request->Complete(std::move(item.status));
  }
}

int64_t Batcher::NumQueuedRequests() const {
  absl::MutexLock lock(&mu_);
  return queues_.num_requests();
}

int64_t Batcher::NumQueuedTokens() const {
  absl::MutexLock lock(&mu_);
  return queues_.num_tokens();
}

bool Batcher::WaitUntilIdleForTesting(int workers_in_runner,
                                      absl::Duration real_timeout) {
  auto idle = [this, workers_in_runner]() {
    mu_.AssertReaderHeld();
    return Idle(workers_in_runner);
  };
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&idle), real_timeout);
}

}  // namespace favor::batching
