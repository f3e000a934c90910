#include "client/loadgen/load_generator.h"

#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/loadgen/poisson_arrivals.h"
#include "client/loadgen/random.h"

namespace favor::bench {
namespace {

// Seeds of the streams of randomness of one run, apart from each other.
constexpr uint64_t kCallerSeedStride = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kArrivalSeedOffset = 0xA5A5A5A5A5A5A5A5ULL;

// Largest open-loop stream backlog the client lets build up before Send
// blocks (the server's own limit is far lower and pushes back first).
constexpr int kOpenLoopStreamInFlight = 1 << 16;

// How long a closed-loop caller waits after an UNAVAILABLE answer.
constexpr absl::Duration kUnavailableBackoff = absl::Milliseconds(50);

// How long a stream may take to end once its messages are answered.
constexpr absl::Duration kStreamEndGrace = absl::Seconds(2);

// The calls of one caller: inputs with drawn lengths, of token ids or text.
class RequestSource {
 public:
  RequestSource(const LoadOptions& options, uint64_t seed)
      : options_(options), random_(seed) {}

  // The next call's inputs; `*tokens` is their total length.
  std::vector<EmbedInput> Next(int64_t* tokens) {
    std::vector<EmbedInput> inputs(
        static_cast<size_t>(options_.inputs_per_call));
    *tokens = 0;
    for (EmbedInput& input : inputs) {
      const int64_t length = options_.lengths.Sample(random_);
      *tokens += length;
      if (options_.corpus != nullptr) {
        input.text = options_.corpus->Cut(
            length - options_.corpus->framing_tokens(), random_);
        continue;
      }
      input.token_ids.resize(static_cast<size_t>(length));
      for (uint32_t& id : input.token_ids) {
        id = static_cast<uint32_t>(
            random_.UniformInt(0, options_.vocab_size - 1));
      }
    }
    return inputs;
  }

 private:
  const LoadOptions& options_;
  Random random_;
};

// One phase of a run: which calls are sent (each is counted).
class RunWindow {
 public:
  RunWindow(absl::Time start, const LoadOptions& options)
      : options_(options), measure_start_(start) {}

  // Whether a call (to be) sent at `at` is sent at all (and counted);
  // false once the phase is over.
  bool ShouldSend(absl::Time at) {
    if (options_.duration > absl::ZeroDuration() &&
        at >= measure_start_ + options_.duration) {
      return false;
    }
    return options_.request_count <= 0 ||
           measured_sent_.fetch_add(1) < options_.request_count;
  }

  // A counted call was answered at `at`.
  void NoteAnswer(absl::Time at) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (at > last_answer_) last_answer_ = at;
  }

  absl::Duration measured_time() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return last_answer_ > measure_start_ ? last_answer_ - measure_start_
                                         : absl::ZeroDuration();
  }

 private:
  const LoadOptions& options_;
  const absl::Time measure_start_;
  std::atomic<int64_t> measured_sent_{0};
  mutable absl::Mutex mu_;
  absl::Time last_answer_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// Everything the callers of one run share.
struct RunContext {
  Client* client;
  const LoadOptions& options;
  EmbedOptions embed_options;
  RunWindow window;
  RunStats stats;
};

void RecordAnswer(RunContext* run, const absl::StatusOr<EmbedResult>& result,
                  int64_t sequences, int64_t tokens, absl::Time sent) {
  const absl::Time answered = absl::Now();
  run->stats.Record(result.status().code(), sequences,
                    result.ok() ? result->num_tokens : tokens, answered - sent);
  run->window.NoteAnswer(answered);
}

CallOptions CallOptionsOf(const LoadOptions& options) {
  CallOptions call;
  call.timeout = options.call_timeout;
  return call;
}

void ClosedLoopCaller(RunContext* run, uint64_t seed) {
  RequestSource source(run->options, seed);
  const CallOptions call = CallOptionsOf(run->options);
  for (;;) {
    int64_t tokens = 0;
    const std::vector<EmbedInput> inputs = source.Next(&tokens);
    const absl::Time sent = absl::Now();
    if (!run->window.ShouldSend(sent)) return;
    absl::StatusOr<EmbedResult> result =
        run->client->Embed(inputs, run->embed_options, call);
    RecordAnswer(run, result, static_cast<int64_t>(inputs.size()), tokens,
                 sent);
    // A server that is gone answers at once: without a pause each caller
    // would send tens of thousands of calls a second into it.
    if (absl::IsUnavailable(result.status())) {
      absl::SleepFor(kUnavailableBackoff);
    }
  }
}

void RunClosedLoopUnary(RunContext* run) {
  std::vector<std::thread> callers;
  for (int i = 0; i < run->options.concurrency; ++i) {
    const uint64_t seed = run->options.seed + kCallerSeedStride * (i + 1);
    callers.emplace_back(ClosedLoopCaller, run, seed);
  }
  for (std::thread& caller : callers) caller.join();
}

// Calls sent and not yet answered, for the open loop to wait on.
class Outstanding {
 public:
  void Add() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++count_;
  }
  void Done() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    --count_;
  }
  void AwaitZero() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int64_t* count) { return *count == 0; }, &count_));
  }

 private:
  absl::Mutex mu_;
  int64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

void RunOpenLoopUnary(RunContext* run, absl::Time start) {
  RequestSource source(run->options, run->options.seed + kCallerSeedStride);
  PoissonArrivals arrivals(run->options.request_rate_per_second,
                           run->options.seed + kArrivalSeedOffset);
  const CallOptions call = CallOptionsOf(run->options);
  Outstanding outstanding;
  for (;;) {
    const absl::Time at = start + arrivals.Next();
    if (!run->window.ShouldSend(at)) break;
    int64_t tokens = 0;
    const std::vector<EmbedInput> inputs = source.Next(&tokens);
    absl::SleepFor(at - absl::Now());
    outstanding.Add();
    const int64_t sequences = static_cast<int64_t>(inputs.size());
    run->client->EmbedAsync(inputs, run->embed_options, call,
                            [run, &outstanding, sequences, tokens,
                             at](absl::StatusOr<EmbedResult> result) {
                              RecordAnswer(run, result, sequences, tokens, at);
                              outstanding.Done();
                            });
  }
  outstanding.AwaitZero();
}

// The streaming runs: one EmbedStream, answers matched to their sending by
// the ids Send hands out (0, 1, 2, ... in Send order, from one sender).
class StreamRun {
 public:
  StreamRun(RunContext* run, int slots) : run_(run), free_slots_(slots) {}

  absl::Status Run(absl::Time start) {
    EmbedStreamOptions stream_options;
    const bool open_loop = run_->options.request_rate_per_second > 0;
    stream_options.max_in_flight =
        open_loop ? kOpenLoopStreamInFlight : run_->options.concurrency * 2;
    stream_options.message_timeout = run_->options.call_timeout;
    stream_options.on_result = [this](StreamedEmbedResult answer) {
      OnAnswer(std::move(answer));
    };
    absl::StatusOr<std::unique_ptr<EmbedStreamer>> streamer =
        run_->client->OpenEmbedStream(stream_options);
    if (!streamer.ok()) return streamer.status();
    if (open_loop) {
      SendOpenLoop(streamer->get(), start);
    } else {
      SendClosedLoop(streamer->get());
    }
    // A broken stream has answered every unanswered message with its own
    // status, and those are counted by code: the run itself stands. A
    // server that never ends the stream must not hold the run (nor spin): once every message is answered or past its
    // deadline, the stream gets kStreamEndGrace to end, then is cancelled.
    absl::Notification finished;
    std::thread watchdog([this, &finished, streamer = streamer->get()] {
      AwaitAnswers(absl::Now() + run_->options.call_timeout + kStreamEndGrace);
      if (!finished.WaitForNotificationWithTimeout(kStreamEndGrace)) {
        streamer->Cancel();
      }
    });
    (*streamer)->Finish().IgnoreError();
    finished.Notify();
    watchdog.join();
    return absl::OkStatus();
  }

 private:
  struct Pending {
    absl::Time sent;
    int64_t sequences = 0;
    int64_t tokens = 0;
  };

  // Sends one call, registered under the id Send will give it; false when
  // the stream has failed.
  bool Send(EmbedStreamer* streamer, const std::vector<EmbedInput>& inputs,
            const Pending& pending) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      pending_[next_id_] = pending;
    }
    absl::StatusOr<uint64_t> id = streamer->Send(inputs, run_->embed_options);
    absl::MutexLock lock(&mu_);
    if (!id.ok()) {
      pending_.erase(next_id_);
      return false;
    }
    ++next_id_;
    return true;
  }

  void SendClosedLoop(EmbedStreamer* streamer) {
    RequestSource source(run_->options, run_->options.seed + kCallerSeedStride);
    for (;;) {
      Pending pending;
      const std::vector<EmbedInput> inputs = source.Next(&pending.tokens);
      pending.sequences = static_cast<int64_t>(inputs.size());
      AcquireSlot();
      pending.sent = absl::Now();
      if (!run_->window.ShouldSend(pending.sent) ||
          !Send(streamer, inputs, pending)) {
        return;
      }
    }
  }

  void SendOpenLoop(EmbedStreamer* streamer, absl::Time start) {
    RequestSource source(run_->options, run_->options.seed + kCallerSeedStride);
    PoissonArrivals arrivals(run_->options.request_rate_per_second,
                             run_->options.seed + kArrivalSeedOffset);
    for (;;) {
      Pending pending;
      pending.sent = start + arrivals.Next();
      if (!run_->window.ShouldSend(pending.sent)) return;
      const std::vector<EmbedInput> inputs = source.Next(&pending.tokens);
      pending.sequences = static_cast<int64_t>(inputs.size());
      absl::SleepFor(pending.sent - absl::Now());
      if (!Send(streamer, inputs, pending)) return;
    }
  }

  void OnAnswer(StreamedEmbedResult answer) ABSL_LOCKS_EXCLUDED(mu_) {
    Pending pending;
    {
      absl::MutexLock lock(&mu_);
      auto found = pending_.find(answer.id);
      if (found == pending_.end()) return;  // Send failed after all
      pending = found->second;
      pending_.erase(found);
      ++free_slots_;
    }
    RecordAnswer(run_, answer.result, pending.sequences, pending.tokens,
                 pending.sent);
  }

  // Until every sent message is answered, or `deadline`.
  void AwaitAnswers(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(
        absl::Condition(
            +[](std::map<uint64_t, Pending>* pending) {
              return pending->empty();
            },
            &pending_),
        deadline);
  }

  void AcquireSlot() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* free) { return *free > 0; }, &free_slots_));
    --free_slots_;
  }

  RunContext* run_;
  absl::Mutex mu_;
  int free_slots_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Pending> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Status ValidateLoadOptions(const LoadOptions& options) {
  if (options.concurrency < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "concurrency must be at least 1, not ", options.concurrency));
  }
  if (!(options.request_rate_per_second >= 0)) {
    return absl::InvalidArgumentError("request rate must be >= 0");
  }
  if (options.inputs_per_call < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs per call must be at least 1, not ", options.inputs_per_call));
  }
  if (options.duration < absl::ZeroDuration() || options.request_count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration and request count must be >= 0, not ",
        absl::FormatDuration(options.duration), " and ",
        options.request_count));
  }
  if (options.duration == absl::ZeroDuration() && options.request_count == 0) {
    return absl::InvalidArgumentError(
        "the run needs a duration or a request count (or both)");
  }
  if (options.warmup < absl::ZeroDuration() || options.vocab_size < 1) {
    return absl::InvalidArgumentError(
        "warm-up must be >= 0 and vocab size >= 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadResult> RunLoad(Client* client, const LoadOptions& options) {
  absl::Status valid = ValidateLoadOptions(options);
  if (!valid.ok()) return valid;
  int64_t warmup_calls = 0;
  if (options.warmup > absl::ZeroDuration()) {
    // A phase of its own: a warm-up call still running when counting began
    // would take server time from the measured phase (1.37 against 1.82
    // requests/s with 16k-token calls).
    LoadOptions warmup = options;
    warmup.duration = options.warmup;
    warmup.request_count = 0;
    warmup.warmup = absl::ZeroDuration();
    warmup.seed = options.seed + 1;
    absl::StatusOr<LoadResult> warmed = RunLoad(client, warmup);
    if (!warmed.ok()) return warmed.status();
    warmup_calls = warmed->totals.calls;
  }
  const absl::Time start = absl::Now();
  EmbedOptions embed_options;
  embed_options.model = options.model;
  RunContext run{client, options, embed_options, RunWindow(start, options), {}};
  const bool open_loop = options.request_rate_per_second > 0;
  if (options.streaming) {
    StreamRun stream(&run, options.concurrency);
    absl::Status status = stream.Run(start);
    if (!status.ok()) return status;
  } else if (open_loop) {
    RunOpenLoopUnary(&run, start);
  } else {
    RunClosedLoopUnary(&run);
  }
  LoadResult result;
  result.totals = run.stats.totals();
  result.latency = run.stats.latency();
  result.measured_time = run.window.measured_time();
  result.warmup_calls = warmup_calls;
  return result;
}

}  // namespace favor::bench
