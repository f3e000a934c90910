#include "favor/embed_streamer.h"

#include <algorithm>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client_impl.h"
#include "convert.h"
#include "favor/client.h"
#include "grpcpp/support/client_callback.h"
#include "retry.h"

namespace favor {

// The stream is a ClientBidiReactor. Locking: mu_ guards the state; no
// gRPC Start* call and no on_result callback is made while mu_ is held
// (gRPC may run a reaction on the calling thread), so every method decides
// under the lock and acts after it.
//
// Writes are started from any thread (Send, the retry timer, reactions), so
// the reactor holds the call open (AddHold) until its write side is closed:
// after WritesDone, or once the stream is broken (a failed write or the end
// of the reads) and no write is in progress. Only then can OnDone come.
class EmbedStreamer::Impl final
    : public grpc::ClientBidiReactor<v1::EmbedStreamRequest,
                                     v1::EmbedStreamResponse> {
 public:
  Impl(Client::Impl* client, EmbedStreamOptions options)
      : client_(client), options_(std::move(options)) {
    stream_deadline_ = options_.stream_timeout == absl::InfiniteDuration()
                           ? absl::InfiniteFuture()
                           : absl::Now() + options_.stream_timeout;
    client_->PrepareContext(stream_deadline_, /*wait_for_ready=*/false,
                            &context_);
    done_future_ = done_promise_.get_future();
  }

  void Start() {
    client_->stub(client_->NextChannel()).async()->EmbedStream(&context_, this);
    AddHold();  // the write side; see the class comment
    StartRead(&response_);
    StartCall();
  }

  absl::StatusOr<uint64_t> Send(absl::Span<const TokenIds> inputs,
                                const EmbedOptions& options);
  std::optional<StreamedEmbedResult> Next();
  void CloseSend();
  absl::Status Finish();
  void Cancel();
  int in_flight() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(outstanding_.size());
  }
  // Cancels the stream unless it has ended, waits for OnDone, and stops
  // the retry waits still pending.
  void Shutdown();

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  struct Message {
    v1::EmbedStreamRequest request;
    absl::Time deadline = absl::InfiniteFuture();
    int attempts = 0;
    // The timer that answers it DEADLINE_EXCEEDED at its deadline; 0: none.
    client_internal::Timer::Id deadline_timer = 0;
  };

  absl::Time MessageDeadline() const;
  // Starts the next write, or WritesDone once sending is closed and every
  // message is answered; at most one at a time.
  void MaybeWrite();
  // Takes the message `id` out (it has its answer): its answer goes to
  // Next()'s queue, or into `answers` for on_result.
  void AnswerLocked(uint64_t id, absl::StatusOr<EmbedResult> result,
                    std::vector<StreamedEmbedResult>* answers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands answers to on_result, one at a time.
  void Deliver(std::vector<StreamedEmbedResult> answers);
  void OnRetryTime(uint64_t id, client_internal::Timer::Id timer);
  void OnDeadline(uint64_t id, client_internal::Timer::Id timer);
  // Schedules `task(timer id)` on the client's timer at `when` and records
  // it in timers_.
  void ScheduleLocked(absl::Time when,
                      std::function<void(client_internal::Timer::Id)> task)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cancels the deadline timers of answered messages (Timer::Cancel may
  // wait for a running task, which takes mu_: so never under mu_).
  void CancelAnsweredTimers() ABSL_LOCKS_EXCLUDED(mu_);
  void HandleResponse(std::vector<StreamedEmbedResult>* answers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes the write side if the stream is broken and no write is in
  // progress; true when the caller must then RemoveHold().
  bool CloseBrokenWriteSideLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Client::Impl* const client_;
  const EmbedStreamOptions options_;
  absl::Time stream_deadline_;
  grpc::ClientContext context_;
  // Only OnReadDone touches it between reads.
  v1::EmbedStreamResponse response_;
  std::promise<void> done_promise_;
  std::future<void> done_future_;
  // Serialises on_result calls.
  absl::Mutex deliver_mu_;

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Message> outstanding_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> write_queue_ ABSL_GUARDED_BY(mu_);
  // The message being written; gRPC reads it until OnWriteDone.
  v1::EmbedStreamRequest writing_message_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_started_ ABSL_GUARDED_BY(mu_) = false;
  // No write may start any more and the hold is (being) removed.
  bool write_side_closed_ ABSL_GUARDED_BY(mu_) = false;
  // A write failed or the reads ended: the stream is over.
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool send_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  std::deque<StreamedEmbedResult> results_ ABSL_GUARDED_BY(mu_);
  // Pending retry waits and message deadlines on the client's timer.
  std::set<client_internal::Timer::Id> timers_ ABSL_GUARDED_BY(mu_);
  std::vector<client_internal::Timer::Id> timers_to_cancel_
      ABSL_GUARDED_BY(mu_);
  client_internal::Timer::Id last_scheduled_ ABSL_GUARDED_BY(mu_) = 0;
};

absl::Time EmbedStreamer::Impl::MessageDeadline() const {
  absl::Duration timeout = options_.message_timeout;
  if (timeout == absl::ZeroDuration()) {
    timeout = client_->options().default_timeout;
  }
  if (timeout == absl::InfiniteDuration()) return stream_deadline_;
  return std::min(stream_deadline_, absl::Now() + timeout);
}

absl::StatusOr<uint64_t> EmbedStreamer::Impl::Send(
    absl::Span<const TokenIds> inputs, const EmbedOptions& options) {
  Message message;
  client_internal::ToProto(inputs, options, message.request.mutable_request());
  uint64_t id;
  {
    absl::MutexLock lock(&mu_);
    const auto can_send = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return send_closed_ || stream_done_ ||
             static_cast<int>(outstanding_.size()) < options_.max_in_flight;
    };
    mu_.Await(absl::Condition(&can_send));
    if (stream_done_) {
      return final_status_.ok()
                 ? absl::FailedPreconditionError("the EmbedStream has ended")
                 : final_status_;
    }
    if (send_closed_) {
      return absl::FailedPreconditionError(
          "EmbedStreamer::Send after CloseSend, Finish or Cancel");
    }
    id = next_id_++;
    message.request.set_request_id(absl::StrCat(id));
    message.deadline = MessageDeadline();
    Message& stored =
        outstanding_.emplace(id, std::move(message)).first->second;
    // The server enforces the deadline too (timeout_micros), but a server
    // that is stuck must not keep the answer from coming.
    if (stored.deadline != absl::InfiniteFuture()) {
      ScheduleLocked(stored.deadline, [this, id](client_internal::Timer::Id t) {
        OnDeadline(id, t);
      });
      stored.deadline_timer = last_scheduled_;
    }
    write_queue_.push_back(id);
  }
  MaybeWrite();
  return id;
}

void EmbedStreamer::Impl::MaybeWrite() {
  CancelAnsweredTimers();
  std::vector<StreamedEmbedResult> expired;
  bool write = false;
  bool writes_done = false;
  {
    absl::MutexLock lock(&mu_);
    if (writing_ || write_side_closed_) return;
    while (!write && !write_queue_.empty()) {
      const uint64_t id = write_queue_.front();
      write_queue_.pop_front();
      const auto found = outstanding_.find(id);
      if (found == outstanding_.end()) continue;
      Message& message = found->second;
      if (message.deadline != absl::InfiniteFuture()) {
        const absl::Duration left = message.deadline - absl::Now();
        if (left <= absl::ZeroDuration()) {
          AnswerLocked(id,
                       absl::DeadlineExceededError(
                           "the EmbedStream message's deadline passed before "
                           "it could be sent"),
                       &expired);
          continue;
        }
        message.request.set_timeout_micros(
            std::max<int64_t>(1, absl::ToInt64Microseconds(left)));
      }
      ++message.attempts;
      writing_message_ = message.request;
      writing_ = true;
      write = true;
    }
    if (!write && send_closed_ && outstanding_.empty()) {
      writes_done_started_ = true;
      write_side_closed_ = true;
      writes_done = true;
    }
  }
  if (!expired.empty()) Deliver(std::move(expired));
  if (write) {
    // writing_message_ is not changed again until OnWriteDone.
    StartWrite(&writing_message_);
  } else if (writes_done) {
    StartWritesDone();
    RemoveHold();
  }
}

bool EmbedStreamer::Impl::CloseBrokenWriteSideLocked() {
  if (!broken_ || writing_ || write_side_closed_) return false;
  write_side_closed_ = true;
  return true;
}

void EmbedStreamer::Impl::OnWriteDone(bool ok) {
  bool release;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    // A failed write means the stream is broken: OnDone follows and answers
    // every outstanding message.
    if (!ok) broken_ = true;
    release = CloseBrokenWriteSideLocked();
  }
  if (release) {
    RemoveHold();
  } else {
    MaybeWrite();
  }
}

void EmbedStreamer::Impl::AnswerLocked(
    uint64_t id, absl::StatusOr<EmbedResult> result,
    std::vector<StreamedEmbedResult>* answers) {
  const auto found = outstanding_.find(id);
  if (found->second.deadline_timer != 0) {
    timers_.erase(found->second.deadline_timer);
    timers_to_cancel_.push_back(found->second.deadline_timer);
  }
  StreamedEmbedResult answer;
  answer.id = id;
  answer.result = std::move(result);
  answer.attempts = std::max(1, found->second.attempts);
  outstanding_.erase(found);
  // Without on_result the answer goes to Next()'s queue in the same critical
  // section, so that Next() never sees it in neither place.
  if (options_.on_result) {
    answers->push_back(std::move(answer));
  } else {
    results_.push_back(std::move(answer));
  }
}

void EmbedStreamer::Impl::Deliver(std::vector<StreamedEmbedResult> answers) {
  absl::MutexLock lock(&deliver_mu_);
  for (StreamedEmbedResult& answer : answers) {
    options_.on_result(std::move(answer));
  }
}

void EmbedStreamer::Impl::HandleResponse(
    std::vector<StreamedEmbedResult>* answers) {
  uint64_t id;
  if (!absl::SimpleAtoi(response_.request_id(), &id) ||
      outstanding_.count(id) == 0) {
    return;  // not one of ours (or already answered): nothing to do
  }
  if (response_.has_response()) {
    AnswerLocked(id, client_internal::FromProto(response_.response()), answers);
    return;
  }
  const absl::Status status =
      client_internal::FromProtoStatus(response_.error());
  std::optional<absl::Duration> hint;
  if (response_.error().retry_after_micros() > 0) {
    hint = absl::Microseconds(response_.error().retry_after_micros());
  }
  Message& message = outstanding_.at(id);
  const std::optional<absl::Duration> delay = client_internal::RetryDelay(
      client_->options().retry, message.attempts, status, hint, absl::Now(),
      message.deadline, client_->jitter());
  if (!delay.has_value() || cancelled_) {
    AnswerLocked(id, status, answers);
    return;
  }
  ScheduleLocked(
      absl::Now() + *delay,
      [this, id](client_internal::Timer::Id t) { OnRetryTime(id, t); });
}

void EmbedStreamer::Impl::ScheduleLocked(
    absl::Time when, std::function<void(client_internal::Timer::Id)> task) {
  // Scheduled under mu_, and every task takes mu_ first: a task cannot run
  // before its id is set and recorded.
  auto timer_id = std::make_shared<client_internal::Timer::Id>(0);
  *timer_id = client_->timer().Schedule(
      when, [task = std::move(task), timer_id] { task(*timer_id); });
  timers_.insert(*timer_id);
  last_scheduled_ = *timer_id;
}

void EmbedStreamer::Impl::CancelAnsweredTimers() {
  std::vector<client_internal::Timer::Id> timers;
  {
    absl::MutexLock lock(&mu_);
    timers.swap(timers_to_cancel_);
  }
  for (client_internal::Timer::Id timer : timers) {
    client_->timer().Cancel(timer);
  }
}

// A timer task leaves timers_ only when it is done with `this`, so that
// Shutdown, which cancels (or waits for) every task still in timers_, never
// lets the streamer go while one is running.
void EmbedStreamer::Impl::OnRetryTime(uint64_t id,
                                      client_internal::Timer::Id timer) {
  bool resend;
  {
    absl::MutexLock lock(&mu_);
    resend = !stream_done_ && outstanding_.count(id) != 0;
    if (resend) write_queue_.push_back(id);
  }
  if (resend) MaybeWrite();
  absl::MutexLock lock(&mu_);
  timers_.erase(timer);
}

void EmbedStreamer::Impl::OnDeadline(uint64_t id,
                                     client_internal::Timer::Id timer) {
  std::vector<StreamedEmbedResult> answers;
  {
    absl::MutexLock lock(&mu_);
    const auto found = outstanding_.find(id);
    if (found != outstanding_.end() && found->second.deadline_timer == timer) {
      found->second.deadline_timer = 0;  // running now: nothing to cancel
      AnswerLocked(id,
                   absl::DeadlineExceededError(
                       "the EmbedStream message's deadline passed before its "
                       "answer came"),
                   &answers);
    }
  }
  if (!answers.empty()) Deliver(std::move(answers));
  MaybeWrite();  // WritesDone may be due now
  absl::MutexLock lock(&mu_);
  timers_.erase(timer);
}

void EmbedStreamer::Impl::OnReadDone(bool ok) {
  if (!ok) {  // the stream is over: OnDone follows once the hold is gone
    bool release;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      release = CloseBrokenWriteSideLocked();
    }
    if (release) RemoveHold();
    return;
  }
  std::vector<StreamedEmbedResult> answers;
  {
    absl::MutexLock lock(&mu_);
    HandleResponse(&answers);
  }
  if (!answers.empty()) Deliver(std::move(answers));
  MaybeWrite();  // WritesDone may be due now; cancels answered timers
  StartRead(&response_);
}

void EmbedStreamer::Impl::OnDone(const grpc::Status& status) {
  std::vector<StreamedEmbedResult> answers;
  {
    absl::MutexLock lock(&mu_);
    stream_done_ = true;
    final_status_ = client_internal::FromGrpcStatus(status);
    const absl::Status unanswered =
        final_status_.ok()
            ? absl::InternalError(
                  "the EmbedStream ended without answering this message")
            : final_status_;
    while (!outstanding_.empty()) {
      AnswerLocked(outstanding_.begin()->first, unanswered, &answers);
    }
    write_queue_.clear();
  }
  if (!answers.empty()) Deliver(std::move(answers));
  CancelAnsweredTimers();
  done_promise_.set_value();
}

std::optional<StreamedEmbedResult> EmbedStreamer::Impl::Next() {
  if (options_.on_result) return std::nullopt;
  absl::MutexLock lock(&mu_);
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !results_.empty() ||
           ((send_closed_ || stream_done_) && outstanding_.empty());
  };
  mu_.Await(absl::Condition(&ready));
  if (results_.empty()) return std::nullopt;
  StreamedEmbedResult result = std::move(results_.front());
  results_.pop_front();
  return result;
}

void EmbedStreamer::Impl::CloseSend() {
  {
    absl::MutexLock lock(&mu_);
    send_closed_ = true;
  }
  MaybeWrite();
}

absl::Status EmbedStreamer::Impl::Finish() {
  CloseSend();
  done_future_.wait();
  absl::MutexLock lock(&mu_);
  return final_status_;
}

void EmbedStreamer::Impl::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    send_closed_ = true;
    cancelled_ = true;
  }
  context_.TryCancel();
}

void EmbedStreamer::Impl::Shutdown() {
  bool done;
  {
    absl::MutexLock lock(&mu_);
    done = stream_done_;
  }
  if (!done) Cancel();
  done_future_.wait();
  std::set<client_internal::Timer::Id> timers;
  {
    absl::MutexLock lock(&mu_);
    timers = timers_;
  }
  for (client_internal::Timer::Id timer : timers)
    client_->timer().Cancel(timer);
  CancelAnsweredTimers();
}

// --- EmbedStreamer -----------------------------------------------------------

EmbedStreamer::EmbedStreamer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

EmbedStreamer::~EmbedStreamer() { impl_->Shutdown(); }

absl::StatusOr<uint64_t> EmbedStreamer::Send(absl::Span<const TokenIds> inputs,
                                             const EmbedOptions& options) {
  return impl_->Send(inputs, options);
}

std::optional<StreamedEmbedResult> EmbedStreamer::Next() {
  return impl_->Next();
}

void EmbedStreamer::CloseSend() { impl_->CloseSend(); }

absl::Status EmbedStreamer::Finish() { return impl_->Finish(); }

void EmbedStreamer::Cancel() { impl_->Cancel(); }

int EmbedStreamer::in_flight() const { return impl_->in_flight(); }

// Client::OpenEmbedStream lives here, next to the streamer it makes.
absl::StatusOr<std::unique_ptr<EmbedStreamer>> Client::OpenEmbedStream(
    const EmbedStreamOptions& options) {
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        "EmbedStreamOptions.max_in_flight must be at least 1");
  }
  if (options.stream_timeout <= absl::ZeroDuration() ||
      options.message_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "EmbedStreamOptions.stream_timeout must be positive and "
        "message_timeout not negative");
  }
  auto impl = std::make_unique<EmbedStreamer::Impl>(impl_.get(), options);
  impl->Start();
  return std::make_unique<EmbedStreamer>(std::move(impl));
}

}  // namespace favor
