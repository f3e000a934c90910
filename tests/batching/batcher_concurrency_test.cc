// Many threads at once against one Batcher: every request is answered exactly
// once, the runner sees each admitted request at most once, and no batch
// breaks its limits. These tests also run under ThreadSanitizer
// (batching_tsan_test).
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/batching/batcher.h"
#include "server/batching/clock.h"
#include "server/batching/fake_clock.h"
#include "server/batching/request.h"
#include "tests/batching/fake_model_runner.h"

namespace favor::batching {
namespace {

using ::favor::batching::testing::CompletionLog;
using ::favor::batching::testing::FakeModelRunner;

struct Sent {
  int64_t num_tokens = 0;
  absl::Status enqueue_status;
};

// What one producer thread sends; a request's id is its index in `sent`.
struct Traffic {
  int num_producers = 8;
  int requests_per_producer = 250;
  bool deadlines = true;     // Some requests get a short deadline.
  bool cancellation = true;  // Some requests are cancelled after Enqueue.
};

class Producers {
 public:
  Producers(const Traffic& traffic, Batcher* batcher, Clock* clock,
            CompletionLog* log)
      : traffic_(traffic),
        batcher_(batcher),
        clock_(clock),
        log_(log),
        sent_(traffic.num_producers * traffic.requests_per_producer) {}

  void Start() {
    for (int p = 0; p < traffic_.num_producers; ++p) {
      threads_.emplace_back([this, p] { Produce(p); });
    }
  }
  void Join() {
    for (std::thread& thread : threads_) thread.join();
  }
  // Valid after Join().
  const std::vector<Sent>& sent() const { return sent_; }

 private:
  void Produce(int producer) {
    std::mt19937 rng(producer + 1);
    for (int i = 0; i < traffic_.requests_per_producer; ++i) {
      const uint64_t id = producer * traffic_.requests_per_producer + i;
      const int64_t num_tokens =
          rng() % 50 == 0 ? 300 : 1 + static_cast<int64_t>(rng() % 200);
      const Priority priority =
          rng() % 3 == 0 ? Priority::kHigh : Priority::kNormal;
      absl::Time deadline = absl::InfiniteFuture();
      if (traffic_.deadlines && rng() % 4 == 0) {
        deadline = clock_->Now() + absl::Microseconds(rng() % 3000);
      }
      std::shared_ptr<CancellationFlag> flag;
      if (traffic_.cancellation && rng() % 8 == 0) {
        flag = std::make_shared<CancellationFlag>();
      }
      sent_[id].num_tokens = num_tokens;
      sent_[id].enqueue_status = batcher_->Enqueue(
          log_->MakeRequest(id, num_tokens, priority, deadline, flag));
      if (flag != nullptr) {
        flag->Cancel();
        batcher_->NotifyCancelled();
      }
    }
  }

  const Traffic traffic_;
  Batcher* const batcher_;
  Clock* const clock_;
  CompletionLog* const log_;
  std::vector<Sent> sent_;  // Each element written by one producer only.
  std::vector<std::thread> threads_;
};

// Advances a FakeClock in small steps until stopped, so that delays and
// deadlines fall due while producers run.
class Ticker {
 public:
  explicit Ticker(FakeClock* clock)
      : thread_([this, clock] {
          while (!stop_.load()) {
            clock->Advance(absl::Microseconds(100));
            std::this_thread::yield();
          }
        }) {}
  ~Ticker() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

Batcher::Options ConcurrentOptions() {
  Batcher::Options options;
  options.model_name = "concurrent";
  options.max_queue_requests = 64;
  options.max_queue_tokens = 4096;
  options.max_batch_tokens = 256;
  options.max_batch_requests = 16;
  options.max_queue_delay = absl::Milliseconds(1);
  options.max_request_age = absl::Milliseconds(5);
  options.max_consecutive_high_batches = 2;
  options.num_workers = 3;
  return options;
}

// Checks the invariants that hold whatever the interleaving.
void CheckExactlyOnce(const Batcher::Options& options,
                      const std::vector<Sent>& sent, const CompletionLog& log,
                      const FakeModelRunner& runner,
                      const std::set<absl::StatusCode>& allowed_codes) {
  const std::map<uint64_t, std::vector<absl::Status>> statuses = log.statuses();
  ASSERT_EQ(statuses.size(), sent.size());
  std::set<uint64_t> ok_ids;
  for (const auto& [id, answers] : statuses) {
    ASSERT_LT(id, sent.size());
    ASSERT_EQ(answers.size(), 1u) << "request " << id;
    const absl::Status& answer = answers.front();
    EXPECT_TRUE(allowed_codes.count(answer.code())) << id << ": " << answer;
    if (!sent[id].enqueue_status.ok()) {
      EXPECT_EQ(answer, sent[id].enqueue_status) << id;
    }
    if (answer.ok()) ok_ids.insert(id);
  }
  std::set<uint64_t> run_ids;
  for (const testing::RunRecord& run : runner.runs()) {
    int64_t tokens = 0;
    for (uint64_t id : run.ids) {
      EXPECT_TRUE(run_ids.insert(id).second)
          << "request " << id << " ran twice";
      tokens += sent[id].num_tokens;
    }
    EXPECT_EQ(run.num_tokens, tokens);
    EXPECT_LE(static_cast<int64_t>(run.ids.size()), options.max_batch_requests);
    EXPECT_TRUE(run.num_tokens <= options.max_batch_tokens ||
                run.ids.size() == 1)
        << run.num_tokens << " tokens in " << run.ids.size() << " requests";
  }
  EXPECT_EQ(run_ids, ok_ids);
  EXPECT_FALSE(ok_ids.empty());
}

TEST(BatcherConcurrencyTest, ManyProducersEveryRequestAnsweredExactlyOnce) {
  FakeClock clock;
  FakeModelRunner runner;
  CompletionLog log;
  const Batcher::Options options = ConcurrentOptions();
  auto batcher = Batcher::Create(options, &runner, &clock);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  Producers producers(Traffic(), batcher->get(), &clock, &log);
  {
    Ticker ticker(&clock);
    producers.Start();
    producers.Join();
  }
  (*batcher)->Shutdown(absl::InfiniteDuration());
  EXPECT_EQ((*batcher)->NumQueuedRequests(), 0);
  CheckExactlyOnce(
      options, producers.sent(), log, runner,
      {absl::StatusCode::kOk, absl::StatusCode::kResourceExhausted,
       absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kCancelled});
}

TEST(BatcherConcurrencyTest, ManyProducersWithTheRealClock) {
  FakeModelRunner runner;
  CompletionLog log;
  Batcher::Options options = ConcurrentOptions();
  options.max_queue_delay = absl::Microseconds(200);
  auto batcher = Batcher::Create(options, &runner);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  Traffic traffic;
  traffic.num_producers = 4;
  traffic.requests_per_producer = 200;
  traffic.deadlines = false;
  Producers producers(traffic, batcher->get(), RealClock::Get(), &log);
  producers.Start();
  producers.Join();
  (*batcher)->Shutdown(absl::InfiniteDuration());
  CheckExactlyOnce(options, producers.sent(), log, runner,
                   {absl::StatusCode::kOk, absl::StatusCode::kResourceExhausted,
                    absl::StatusCode::kCancelled});
}

TEST(BatcherConcurrencyTest, ShutdownWhileProducersEnqueue) {
  FakeClock clock;
  FakeModelRunner runner;
  CompletionLog log;
  Batcher::Options options = ConcurrentOptions();
  options.max_queue_delay = absl::ZeroDuration();
  auto batcher = Batcher::Create(options, &runner, &clock);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  Traffic traffic;
  traffic.num_producers = 4;
  traffic.requests_per_producer = 300;
  traffic.deadlines = false;
  Producers producers(traffic, batcher->get(), &clock, &log);
  producers.Start();
  ASSERT_TRUE(log.WaitForTotal(100));
  (*batcher)->Shutdown(absl::InfiniteDuration());
  producers.Join();
  CheckExactlyOnce(
      options, producers.sent(), log, runner,
      {absl::StatusCode::kOk, absl::StatusCode::kResourceExhausted,
       absl::StatusCode::kCancelled, absl::StatusCode::kUnavailable});
}

}  // namespace
}  // namespace favor::batching
