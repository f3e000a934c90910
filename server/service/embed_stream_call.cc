#include "server/service/embed_stream_call.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/metrics/metric_names.h"
#include "server/service/embed_validation.h"
#include "server/service/status_mapping.h"
#include "server/service/unary_call.h"

namespace favor::service {
namespace {

void SetError(const absl::Status& status, v1::EmbedStreamResponse* out) {
  out->clear_response();
  ToStreamError(status, out->mutable_error());
}

}  // namespace

struct EmbedStreamCall::Message {
  v1::EmbedStreamResponse out;
  std::shared_ptr<batching::CancellationFlag> cancellation =
      std::make_shared<batching::CancellationFlag>();
  absl::Time start = absl::Now();
  std::string model;  // The metrics label, once the model is known.
  // The answer's bound until it is answered, then its size (backpressure).
  int64_t answer_bytes = 0;
};

EmbedStreamCall* EmbedStreamCall::Start(grpc::CallbackServerContext* context,
                                        Service* service,
                                        metrics::Metrics* metrics,
                                        const StreamLimits& limits,
                                        OpenCalls* open_calls,
                                        CallLogging logging) {
  std::shared_ptr<EmbedStreamCall> call(new EmbedStreamCall(
      context, service, metrics, limits, open_calls, std::move(logging)));
  if (!open_calls->Begin(call)) return nullptr;
  call->self_ = call;
  call->StartRead(&call->request_);
  return call.get();
}

EmbedStreamCall::EmbedStreamCall(grpc::CallbackServerContext* context,
                                 Service* service, metrics::Metrics* metrics,
                                 const StreamLimits& limits,
                                 OpenCalls* open_calls, CallLogging logging)
    : context_(context),
      service_(service),
      metrics_(metrics),
      limits_(limits),
      open_calls_(open_calls),
      in_flight_(metrics->TrackInFlight(metrics::kMethodEmbedStream)),
      logging_(std::move(logging)) {
  usage_.inputs = 0;
  usage_.tokens = 0;
  usage_.queue_time = absl::ZeroDuration();
  usage_.compute_time = absl::ZeroDuration();
}

void EmbedStreamCall::FinishLogged(const grpc::Status& status) {
  AccessRecord record;
  {
    absl::MutexLock lock(&mu_);
    record = usage_;
  }
  EndCallLogging(logging_, metrics::kMethodEmbedStream, status,
                 absl::Now() - start_, std::move(record), context_);
  Finish(status);
}

void EmbedStreamCall::OnReadDone(bool ok) {
  if (ok) Handle(request_);
  StreamAction action;
  {
    absl::MutexLock lock(&mu_);
    action = Transition(!ok ? StreamEvent::kReadFailed
                        : HasRoom() ? StreamEvent::kReadWithRoom
                            : StreamEvent::kReadAtLimit);
  }
  Perform(action);
  Act();
}

void EmbedStreamCall::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    writing_.reset();
    if (!ok) Transition(StreamEvent::kCancel);  // a broken stream
  }
  if (!ok) Cancel();
  Act();
}

void EmbedStreamCall::OnCancel() {
  {
    absl::MutexLock lock(&mu_);
    Transition(StreamEvent::kCancel);
  }
  Cancel();
  Act();
}

void EmbedStreamCall::OnDone() {
  // Unregistered while this address is still ours (a new stream may reuse
  // it once freed). What follows needs nothing the service owns.
  open_calls_->End(this);
  // Frees the reactor, unless StopStreams() holds it for a moment longer.
  std::shared_ptr<EmbedStreamCall> self = std::move(self_);
}

void EmbedStreamCall::StopForShutdown() {
  {
    absl::MutexLock lock(&mu_);
    Transition(StreamEvent::kShutdown);
  }
  Act();
}

StreamAction EmbedStreamCall::Transition(StreamEvent event) {
  const StreamTransition transition = NextStreamState(state_, event);
  state_ = transition.next;
  return transition.action;
}

void EmbedStreamCall::Perform(StreamAction action) {
  switch (action) {
    case StreamAction::kNone:
      return;
    case StreamAction::kStartRead:
      StartRead(&request_);
      return;
    case StreamAction::kFinishOk:
      in_flight_.reset();
      FinishLogged(grpc::Status::OK);
      return;
    case StreamAction::kFinishUnavailable:
      in_flight_.reset();
      FinishLogged(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "server is shutting down: every message read was "
                          "answered; send the others to another replica"));
      return;
    case StreamAction::kFinishCancelled:
      in_flight_.reset();
      FinishLogged(
          grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled"));
      return;
  }
}

void EmbedStreamCall::Handle(const v1::EmbedStreamRequest& in) {
  auto owned = std::make_unique<Message>();
  Message* message = owned.get();
  message->out.set_request_id(in.request_id());
  bool stopped = false;
  {
    absl::MutexLock lock(&mu_);
    stopped = StreamStopped(state_);
    active_[message] = std::move(owned);
  }
  // A message read as the call was cancelled, or after Finish: answered
  // CANCELLED here and now. Started, a text message would be answered later
  // by a tokenizer thread, after OnDone may have freed this reactor (a
  // stream cancelled right after a text message would be used after it is
  // freed). A message started before the
  // cancel is safe: the stream finishes only once it is answered.
  const absl::Status status =
      stopped ? absl::CancelledError("stream cancelled") : Start(in, message);
  if (!status.ok()) Complete(message, status);
}

absl::Status EmbedStreamCall::Start(const v1::EmbedStreamRequest& in,
                                    Message* message) {
  RETURN_IF_ERROR(CheckEmbedStreamMessage(in));
  RETURN_IF_ERROR(service_->CheckServing());
  absl::Time deadline = DeadlineOf(*context_);
  if (in.timeout_micros() > 0) {
    deadline = std::min(
        deadline, message->start + absl::Microseconds(in.timeout_micros()));
  }
  auto on_model = [this, message](absl::string_view model,
                                  std::weak_ptr<batching::Batcher> batcher,
                                  int64_t answer_bytes_bound) {
    message->model = std::string(model);
    absl::MutexLock lock(&mu_);
    message->answer_bytes = answer_bytes_bound;
    // Drop the batchers of revisions freed since (a long stream across
    // many reloads keeps a bounded map).
    for (auto it = batchers_.begin(); it != batchers_.end();) {
      it = it->second.expired() ? batchers_.erase(it) : std::next(it);
    }
    const batching::Batcher* key = batcher.lock().get();
    batchers_.emplace(key, std::move(batcher));
    // Cancelled before its inputs are enqueued: they are refused at once.
    if (StreamStopped(state_)) message->cancellation->Cancel();
  };
  return service_->StartEmbed(
      in.request(), deadline, message->cancellation, on_model,
      [this, message](absl::Status status) { Complete(message, status); },
      message->out.mutable_response());
}

// Runs once per message, on any thread.
void EmbedStreamCall::Complete(Message* message, const absl::Status& status) {
  metrics_->RecordRequest(message->model, metrics::kMethodEmbedStream,
                          status.code(), absl::Now() - message->start);
  if (!status.ok()) SetError(status, &message->out);
  const int64_t answer_bytes =
      static_cast<int64_t>(message->out.ByteSizeLong());
  {
    absl::MutexLock lock(&mu_);
    if (status.ok()) {
      const v1::EmbedResponse& response = message->out.response();
      usage_.model = message->model;
      usage_.inputs += response.embeddings_size();
      usage_.tokens += response.num_tokens();
      *usage_.queue_time +=
          absl::Microseconds(response.timing().queue_time_micros());
      *usage_.compute_time +=
          absl::Microseconds(response.timing().compute_time_micros());
    }
    auto it = active_.find(message);
    message->answer_bytes = answer_bytes;
    to_write_.push_back(std::move(it->second));
    active_.erase(it);
  }
  Act();
}

// Drops the active messages' queued work: sets their flags and wakes the
// batchers that hold it.
void EmbedStreamCall::Cancel() {
  std::vector<std::shared_ptr<batching::Batcher>> batchers;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [message, owned] : active_) message->cancellation->Cancel();
    for (auto& [key, batcher] : batchers_) {
      if (auto live = batcher.lock()) batchers.push_back(std::move(live));
    }
  }
  for (auto& batcher : batchers) batcher->NotifyCancelled();
}

// Messages read and not yet written: what backpressure counts.
int64_t EmbedStreamCall::InFlight() const {
  return static_cast<int64_t>(active_.size() + to_write_.size()) +
         (writing_ != nullptr ? 1 : 0);
}

// Their answers' bytes (bounds for the active ones); summed afresh, over at
// most max_messages_in_flight messages, rather than kept in step.
int64_t EmbedStreamCall::AnswerBytesInFlight() const {
  int64_t bytes = writing_ != nullptr ? writing_->answer_bytes : 0;
  for (const auto& [message, owned] : active_) bytes += message->answer_bytes;
  for (const auto& message : to_write_) bytes += message->answer_bytes;
  return bytes;
}

bool EmbedStreamCall::HasRoom() const {
  return InFlight() < limits_.max_messages_in_flight &&
         AnswerBytesInFlight() < limits_.max_answer_bytes_in_flight;
}

// Resumes reading, starts the next write or finishes the stream, when due.
// Decisions are taken under the lock; gRPC calls are made outside it.
void EmbedStreamCall::Act() {
  StreamAction resume = StreamAction::kNone;
  {
    absl::MutexLock lock(&mu_);
    if (HasRoom()) {
      resume = Transition(StreamEvent::kRoom);
    }
  }
  Perform(resume);
  const v1::EmbedStreamResponse* write = nullptr;
  StreamAction finish = StreamAction::kNone;
  {
    absl::MutexLock lock(&mu_);
    finish = TakeWriteOrFinish(&write);
  }
  if (write != nullptr) StartWrite(write);
  Perform(finish);
}

// Moves the next answer into writing_ (setting `*write`), or, with nothing
// left to write or compute, applies kAllAnswered. Nothing while a write is
// in flight.
StreamAction EmbedStreamCall::TakeWriteOrFinish(
    const v1::EmbedStreamResponse** write) {
  if (state_ == StreamState::kFinished || writing_ != nullptr) {
    return StreamAction::kNone;
  }
  if (StreamStopped(state_)) to_write_.clear();  // answers are discarded
  if (!to_write_.empty()) {
    writing_ = std::move(to_write_.front());
    to_write_.pop_front();
    *write = &writing_->out;
    return StreamAction::kNone;
  }
  if (!active_.empty()) return StreamAction::kNone;
  return Transition(StreamEvent::kAllAnswered);
}

}  // namespace favor::service
