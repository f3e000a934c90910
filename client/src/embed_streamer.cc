// favor::EmbedStreamer and the user's side of its Impl: opening the stream,
// Send, Next, CloseSend, Finish, Cancel and the shutdown. The reactor's
// side is in embed_stream_reactions.cc.
#include "favor/embed_streamer.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "convert.h"
#include "embed_streamer_impl.h"
#include "favor/client.h"
#include "utf8.h"

namespace favor {

using client_internal::NextSendState;
using client_internal::SendEvent;
using client_internal::SendState;
using client_internal::StreamState;

namespace {

absl::Time StreamDeadline(const EmbedStreamOptions& options) {
  return options.stream_timeout == absl::InfiniteDuration()
             ? absl::InfiniteFuture()
             : absl::Now() + options.stream_timeout;
}

}  // namespace

EmbedStreamer::Impl::Impl(Client::Impl* client, EmbedStreamOptions options)
    : client_(client),
      options_(std::move(options)),
      stream_deadline_(StreamDeadline(options_)) {
  client_->PrepareContext(stream_deadline_, /*wait_for_ready=*/false,
                          &context_);
  done_future_ = done_promise_.get_future();
}

void EmbedStreamer::Impl::Start() {
  client_->stub(client_->NextChannel()).async()->EmbedStream(&context_, this);
  AddHold();  // the write side; see embed_streamer_impl.h
  StartRead(&response_);
  StartCall();
}

int EmbedStreamer::Impl::in_flight() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(outstanding_.size());
}

absl::Time EmbedStreamer::Impl::MessageDeadline() const {
  absl::Duration timeout = options_.message_timeout;
  if (timeout == absl::ZeroDuration()) {
    timeout = client_->options().default_timeout;
  }
  if (timeout == absl::InfiniteDuration()) return stream_deadline_;
  return std::min(stream_deadline_, absl::Now() + timeout);
}

absl::StatusOr<uint64_t> EmbedStreamer::Impl::Send(
    v1::EmbedStreamRequest request) {
  uint64_t id;
  {
    absl::MutexLock lock(&mu_);
    const auto can_send = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return send_state_ != SendState::kOpen ||
             stream_state_ == StreamState::kDone ||
             static_cast<int>(outstanding_.size()) < options_.max_in_flight;
    };
    mu_.Await(absl::Condition(&can_send));
    if (stream_state_ == StreamState::kDone) {
      return final_status_.ok()
                 ? absl::FailedPreconditionError("the EmbedStream has ended")
                 : final_status_;
    }
    if (send_state_ != SendState::kOpen) {
      return absl::FailedPreconditionError(
          "EmbedStreamer::Send after CloseSend, Finish or Cancel");
    }
    id = AddMessageLocked(std::move(request));
  }
  MaybeWrite();
  return id;
}

uint64_t EmbedStreamer::Impl::AddMessageLocked(v1::EmbedStreamRequest request) {
  const uint64_t id = next_id_++;
  Message& message = outstanding_[id];
  message.request = std::move(request);
  message.request.set_request_id(absl::StrCat(id));
  message.deadline = MessageDeadline();
  // The server enforces the deadline too (timeout_micros), but a server
  // that is stuck must not keep the answer from coming.
  if (message.deadline != absl::InfiniteFuture()) {
    message.deadline_timer = ScheduleLocked(
        message.deadline, [this, id](TimerId timer) { OnDeadline(id, timer); });
  }
  write_queue_.push_back(id);
  return id;
}

std::optional<StreamedEmbedResult> EmbedStreamer::Impl::Next() {
  if (options_.on_result) return std::nullopt;
  absl::MutexLock lock(&mu_);
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !results_.empty() || ((send_state_ != SendState::kOpen ||
                                  stream_state_ == StreamState::kDone) &&
                                 outstanding_.empty());
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
    send_state_ = NextSendState(send_state_, SendEvent::kCloseSend);
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
    send_state_ = NextSendState(send_state_, SendEvent::kCancel);
  }
  context_.TryCancel();
}

void EmbedStreamer::Impl::Shutdown() {
  bool done;
  {
    absl::MutexLock lock(&mu_);
    done = stream_state_ == StreamState::kDone;
  }
  if (!done) Cancel();
  done_future_.wait();
  std::set<TimerId> timers;
  {
    absl::MutexLock lock(&mu_);
    timers = timers_;
  }
  for (TimerId timer : timers) client_->timer().Cancel(timer);
  CancelAnsweredTimers();
}

// --- EmbedStreamer -----------------------------------------------------------

EmbedStreamer::EmbedStreamer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

EmbedStreamer::~EmbedStreamer() { impl_->Shutdown(); }

absl::StatusOr<uint64_t> EmbedStreamer::Send(
    absl::Span<const EmbedInput> inputs, const EmbedOptions& options) {
  if (absl::Status status = client_internal::CheckInputTexts(inputs);
      !status.ok()) {
    return status;
  }
  v1::EmbedStreamRequest request;
  client_internal::ToProto(inputs, options, request.mutable_request());
  return impl_->Send(std::move(request));
}

absl::StatusOr<uint64_t> EmbedStreamer::Send(absl::Span<const TokenIds> inputs,
                                             const EmbedOptions& options) {
  return Send(client_internal::ToEmbedInputs(inputs), options);
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
