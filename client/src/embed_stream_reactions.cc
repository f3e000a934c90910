// The reactor's side of EmbedStreamer::Impl (embed_streamer_impl.h): writes
// one at a time, reads and their answers, retries and message deadlines on
// the client's timer, and the end of the stream.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "convert.h"
#include "embed_streamer_impl.h"
#include "retry.h"

namespace favor {

using client_internal::SendState;
using client_internal::StreamEvent;
using client_internal::StreamState;

bool EmbedStreamer::Impl::ApplyLocked(StreamEvent event) {
  const client_internal::StreamTransition transition =
      client_internal::NextStreamState(stream_state_, event);
  stream_state_ = transition.next;
  return transition.release_hold;
}

void EmbedStreamer::Impl::MaybeWrite() {
  CancelAnsweredTimers();
  std::vector<StreamedEmbedResult> expired;
  WriteStep step;
  {
    absl::MutexLock lock(&mu_);
    step = NextWriteLocked(&expired);
  }
  if (!expired.empty()) Deliver(std::move(expired));
  if (step == WriteStep::kWrite) {
    // writing_message_ is not changed again until OnWriteDone.
    StartWrite(&writing_message_);
  } else if (step == WriteStep::kWritesDone) {
    StartWritesDone();
    RemoveHold();
  }
}

EmbedStreamer::Impl::WriteStep EmbedStreamer::Impl::NextWriteLocked(
    std::vector<StreamedEmbedResult>* expired) {
  if (stream_state_ != StreamState::kOpen) return WriteStep::kNothing;
  while (!write_queue_.empty()) {
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
                     expired);
        continue;
      }
      message.request.set_timeout_micros(
          std::max<int64_t>(1, absl::ToInt64Microseconds(left)));
    }
    ++message.attempts;
    writing_message_ = message.request;
    ApplyLocked(StreamEvent::kWriteStarted);
    return WriteStep::kWrite;
  }
  if (send_state_ != SendState::kOpen && outstanding_.empty()) {
    ApplyLocked(StreamEvent::kWritesDone);  // releases the hold
    return WriteStep::kWritesDone;
  }
  return WriteStep::kNothing;
}

void EmbedStreamer::Impl::OnWriteDone(bool ok) {
  bool release;
  {
    absl::MutexLock lock(&mu_);
    // A failed write means the stream is broken: OnDone follows and answers
    // every outstanding message.
    release =
        ApplyLocked(ok ? StreamEvent::kWriteOk : StreamEvent::kWriteFailed);
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
  if (!delay.has_value() || send_state_ == SendState::kCancelled) {
    AnswerLocked(id, status, answers);
    return;
  }
  ScheduleLocked(absl::Now() + *delay,
                 [this, id](TimerId timer) { OnRetryTime(id, timer); });
}

EmbedStreamer::Impl::TimerId EmbedStreamer::Impl::ScheduleLocked(
    absl::Time when, std::function<void(TimerId)> task) {
  // Scheduled under mu_, and every task takes mu_ first: a task cannot run
  // before its id is set and recorded.
  auto timer_id = std::make_shared<TimerId>(0);
  *timer_id = client_->timer().Schedule(
      when, [task = std::move(task), timer_id] { task(*timer_id); });
  timers_.insert(*timer_id);
  return *timer_id;
}

void EmbedStreamer::Impl::CancelAnsweredTimers() {
  std::vector<TimerId> timers;
  {
    absl::MutexLock lock(&mu_);
    timers.swap(timers_to_cancel_);
  }
  for (TimerId timer : timers) client_->timer().Cancel(timer);
}

// A timer task leaves timers_ only when it is done with `this`, so that
// Shutdown, which cancels (or waits for) every task still in timers_, never
// lets the streamer go while one is running.
void EmbedStreamer::Impl::OnRetryTime(uint64_t id, TimerId timer) {
  bool resend;
  {
    absl::MutexLock lock(&mu_);
    resend = stream_state_ != StreamState::kDone && outstanding_.count(id) != 0;
    if (resend) write_queue_.push_back(id);
  }
  if (resend) MaybeWrite();
  absl::MutexLock lock(&mu_);
  timers_.erase(timer);
}

void EmbedStreamer::Impl::OnDeadline(uint64_t id, TimerId timer) {
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
      release = ApplyLocked(StreamEvent::kReadsEnded);
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
    ApplyLocked(StreamEvent::kDone);
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

}  // namespace favor
