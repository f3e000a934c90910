// FavorService::EmbedStream: one bidirectional stream, many Embed calls.
//
// Each request message is checked and enqueued like a unary Embed (its own
// CancellationFlag, its deadline the earlier of the stream's and its
// timeout_micros) and answered, in completion order, with its request_id and
// either the response or an error Status; a failed message does not end the
// stream. One write is in flight at a time; finished answers wait in a
// queue. The stream finishes (OK) once the client has closed its side and
// every message is answered; on cancellation the queued work is dropped,
// computed answers are discarded, and it finishes CANCELLED once every
// message has completed (the reactor must outlive their done callbacks).
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/batching/retry_hint.h"
#include "server/common/status_macros.h"
#include "server/metrics/metric_names.h"
#include "server/service/favor_service.h"
#include "server/service/unary_call.h"

namespace favor::service {
namespace {

constexpr size_t kMaxRequestIdBytes = 128;

void SetError(const absl::Status& status, v1::EmbedStreamResponse* out) {
  out->clear_response();
  v1::Status* error = out->mutable_error();
  error->set_code(static_cast<int32_t>(status.code()));
  error->set_message(std::string(status.message()));
  std::optional<absl::Duration> retry = batching::RetryAfter(status);
  if (retry.has_value()) {
    error->set_retry_after_micros(absl::ToInt64Microseconds(*retry));
  }
}

}  // namespace

class FavorService::EmbedStreamCall final
    : public grpc::ServerBidiReactor<v1::EmbedStreamRequest,
                                     v1::EmbedStreamResponse> {
 public:
  EmbedStreamCall(FavorService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    if (service_->metrics_ != nullptr) {
      in_flight_.emplace(
          service_->metrics_->TrackInFlight(metrics::kMethodEmbedStream));
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      absl::MutexLock lock(&mu_);
      reads_done_ = true;
    } else {
      Handle(request_);
    }
    bool read_again = false;
    {
      absl::MutexLock lock(&mu_);
      if (ok && !cancelled_) {
        read_again =
            InFlight() < service_->options_.max_stream_messages_in_flight;
        read_paused_ = !read_again;
      }
    }
    if (read_again) StartRead(&request_);
    Act();
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_.reset();
      if (!ok) cancelled_ = true;  // a broken stream
    }
    if (!ok) CancelActive();
    Act();
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    CancelActive();
    Act();
  }

  void OnDone() override { delete this; }

 private:
  struct Message {
    v1::EmbedStreamResponse out;
    std::shared_ptr<batching::CancellationFlag> cancellation =
        std::make_shared<batching::CancellationFlag>();
    absl::Time start = absl::Now();
    std::string model;
  };

  void Handle(const v1::EmbedStreamRequest& in) {
    auto owned = std::make_unique<Message>();
    Message* message = owned.get();
    message->out.set_request_id(in.request_id());
    {
      absl::MutexLock lock(&mu_);
      active_[message] = std::move(owned);
    }
    absl::Status status = Start(in, message);
    if (!status.ok()) Complete(message, status);
  }

  absl::Status Start(const v1::EmbedStreamRequest& in, Message* message) {
    if (in.request_id().size() > kMaxRequestIdBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("request_id has ", in.request_id().size(),
                       " bytes; at most ", kMaxRequestIdBytes));
    }
    if (in.timeout_micros() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "timeout_micros is ", in.timeout_micros(), "; must be >= 0"));
    }
    RETURN_IF_ERROR(service_->CheckServing());
    v1::EmbedResponse* response = message->out.mutable_response();
    ASSIGN_OR_RETURN(PreparedEmbed prepared,
                     service_->PrepareEmbed(in.request(), response));
    message->model = prepared.entry->model->name();
    absl::Time deadline = DeadlineOf(*context_);
    if (in.timeout_micros() > 0) {
      deadline = std::min(
          deadline, message->start + absl::Microseconds(in.timeout_micros()));
    }
    {
      absl::MutexLock lock(&mu_);
      batchers_.insert(prepared.entry->batcher.get());
      if (cancelled_) message->cancellation->Cancel();
    }
    service_->EnqueueEmbed(
        std::move(prepared), deadline, message->cancellation,
        [this, message](absl::Status status) { Complete(message, status); },
        response);
    return absl::OkStatus();
  }

  // Runs once per message, on any thread.
  void Complete(Message* message, const absl::Status& status) {
    if (service_->metrics_ != nullptr) {
      service_->metrics_->RecordRequest(
          message->model, metrics::kMethodEmbedStream, status.code(),
          absl::Now() - message->start);
    }
    if (!status.ok()) SetError(status, &message->out);
    {
      absl::MutexLock lock(&mu_);
      auto it = active_.find(message);
      to_write_.push_back(std::move(it->second));
      active_.erase(it);
    }
    Act();
  }

  void CancelActive() {
    std::set<batching::Batcher*> batchers;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [message, owned] : active_) message->cancellation->Cancel();
      batchers = batchers_;
    }
    for (batching::Batcher* batcher : batchers) batcher->NotifyCancelled();
  }

  // Messages read and not yet written: what backpressure counts.
  int64_t InFlight() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int64_t>(active_.size() + to_write_.size()) +
           (writing_ != nullptr ? 1 : 0);
  }

  // Starts the next write, resumes reading, or finishes the stream, when
  // due. Decisions are taken under the lock; gRPC calls are made outside it.
  void Act() {
    const v1::EmbedStreamResponse* write = nullptr;
    std::optional<grpc::Status> finish;
    bool resume_reading = false;
    {
      absl::MutexLock lock(&mu_);
      if (read_paused_ && !cancelled_ && !finished_ &&
          InFlight() < service_->options_.max_stream_messages_in_flight) {
        read_paused_ = false;
        resume_reading = true;
      }
    }
    if (resume_reading) StartRead(&request_);
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || writing_ != nullptr) return;
      if (cancelled_) to_write_.clear();
      if (!to_write_.empty()) {
        writing_ = std::move(to_write_.front());
        to_write_.pop_front();
        write = &writing_->out;
      } else if ((reads_done_ || cancelled_) && active_.empty() &&
                 (!read_paused_ || cancelled_)) {
        finished_ = true;
        finish = cancelled_ ? grpc::Status(grpc::StatusCode::CANCELLED,
                                           "stream cancelled")
                            : grpc::Status::OK;
      }
    }
    if (write != nullptr) StartWrite(write);
    if (finish.has_value()) {
      in_flight_.reset();
      Finish(*finish);
    }
  }

  FavorService* const service_;
  grpc::CallbackServerContext* const context_;
  v1::EmbedStreamRequest request_;  // the read buffer
  std::optional<metrics::Metrics::InFlightGuard> in_flight_;

  absl::Mutex mu_;
  std::map<Message*, std::unique_ptr<Message>> active_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Message>> to_write_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Message> writing_ ABSL_GUARDED_BY(mu_);
  std::set<batching::Batcher*> batchers_ ABSL_GUARDED_BY(mu_);
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  // Reading stopped at max_stream_messages_in_flight; Act() resumes it.
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
FavorService::EmbedStream(grpc::CallbackServerContext* context) {
  return new EmbedStreamCall(this, context);
}

}  // namespace favor::service
