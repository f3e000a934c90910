// The reactor of one EmbedStream call: one bidirectional stream, many Embed
// calls.
//
// Each request message is checked and enqueued like a unary Embed (its own
// CancellationFlag, its deadline the earlier of the stream's and its
// timeout_micros) and answered, in completion order, with its request_id and
// either the response or an error Status; a failed message does not end the
// stream. One write is in flight at a time; finished answers wait in a
// queue. Reading stops while max_messages_in_flight messages are read and
// not yet written, or while their answers may take max_answer_bytes_in_flight
// bytes or more (backpressure: each message counts its answer's bound,
// AnswerBytesBound, until it is answered, then the answer's size until it
// is written), so a client that sends faster than it reads cannot make the
// server buffer without bound: a stream holds at most that many bytes of
// answers plus one message's. The stream finishes
// (OK) once the client has closed its side and every message is answered;
// on cancellation the queued work is dropped, computed answers are
// discarded, and it finishes CANCELLED once every message has completed (the
// reactor must outlive their done callbacks). At shutdown
// (OpenCalls::StopStreams) it reads no more, answers what it has read and
// finishes UNAVAILABLE, or OK if the client had already closed its side.
// embed_stream_state.h holds the states and their transition table.
//
// Nothing blocks: every callback takes the reactor's mutex for a few field
// updates and makes its gRPC calls outside it.
#ifndef FAVOR_SERVER_SERVICE_EMBED_STREAM_CALL_H_
#define FAVOR_SERVER_SERVICE_EMBED_STREAM_CALL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/batching/batcher.h"
#include "server/batching/request.h"
#include "server/metrics/metrics.h"
#include "server/service/embed_stream_state.h"
#include "server/service/call_log.h"
#include "server/service/open_calls.h"

namespace favor::service {

// Backpressure (see the class comment), both at least 1.
struct StreamLimits {
  int64_t max_messages_in_flight = 256;
  int64_t max_answer_bytes_in_flight = int64_t{64} << 20;
};

class EmbedStreamCall final
    : public grpc::ServerBidiReactor<v1::EmbedStreamRequest,
                                     v1::EmbedStreamResponse>,
      public OpenCalls::Stoppable {
 public:
  // What the stream needs of the service, and no more (FavorService
  // implements it; the unary Embed goes through the same StartEmbed).
  class Service {
   public:
    // Called with the model a call resolved to and the batcher its inputs
    // go to, before any input is enqueued. Keep the batcher weakly: a
    // reload frees it once the calls that hold its revision are answered.
    // `answer_bytes_bound` bounds the size of the call's answer
    // (AnswerBytesBound, embed_validation.h).
    using OnModel = absl::FunctionRef<void(
        absl::string_view model, std::weak_ptr<batching::Batcher> batcher,
        int64_t answer_bytes_bound)>;

    virtual ~Service() = default;

    // UNAVAILABLE once the service drains, else OK.
    virtual absl::Status CheckServing() const = 0;

    // Checks `request` at the edge, fills the parts of `response` known
    // before computing, calls `on_model`, then enqueues one batching::Request
    // per input (per window with TRUNCATION_CHUNK) with `deadline` and
    // `cancellation`. A request with text is copied and handed to the
    // tokenizer threads, which tokenise and enqueue it (a text they refuse
    // answers through `done`; their full queue is an error returned at
    // once). OK: `done` runs exactly once, when every input is answered (the
    // first failure wins and sets `cancellation` to drop the others);
    // `response` must live until then. An error: nothing was enqueued and
    // `done` never runs.
    virtual absl::Status StartEmbed(
        const v1::EmbedRequest& request, absl::Time deadline,
        std::shared_ptr<batching::CancellationFlag> cancellation,
        OnModel on_model, absl::AnyInvocable<void(absl::Status)> done,
        v1::EmbedResponse* response) = 0;
  };

  // Begins the call in `open_calls` and starts reading; null when
  // `open_calls` no longer accepts calls (answer UNAVAILABLE). `service`,
  // `metrics` and `open_calls` (not null) must outlive the call;
  // max_messages_in_flight >= 1. The reactor frees itself once gRPC is done
  // with it (OnDone) and no StopStreams() holds it.
  // `logging` says how the stream's one access-log line, written as it
  // finishes, is made (call_log.h): its inputs and tokens are summed over
  // the messages answered OK, and so are their queue and compute times.
  static EmbedStreamCall* Start(grpc::CallbackServerContext* context,
                                Service* service, metrics::Metrics* metrics,
                                const StreamLimits& limits,
                                OpenCalls* open_calls,
                                CallLogging logging = {});

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;
  void StopForShutdown() override;

  // Implementation details follow.
 private:
  struct Message;

  EmbedStreamCall(grpc::CallbackServerContext* context, Service* service,
                  metrics::Metrics* metrics, const StreamLimits& limits,
                  OpenCalls* open_calls, CallLogging logging);
  // Writes the access-log line, then finishes with `status`.
  void FinishLogged(const grpc::Status& status);

  // Applies `event` to state_ and returns what to do about it.
  StreamAction Transition(StreamEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Perform(StreamAction action);

  void Handle(const v1::EmbedStreamRequest& in);
  absl::Status Start(const v1::EmbedStreamRequest& in, Message* message);
  void Complete(Message* message, const absl::Status& status);
  void Cancel();
  int64_t InFlight() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t AnswerBytesInFlight() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Below both limits: the next message may be read.
  bool HasRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Act();
  StreamAction TakeWriteOrFinish(const v1::EmbedStreamResponse** write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::CallbackServerContext* const context_;
  Service* const service_;
  metrics::Metrics* const metrics_;
  const StreamLimits limits_;
  OpenCalls* const open_calls_;
  // The reactor's own reference, from Start() to OnDone: OpenCalls holds it
  // weakly, and pins it while it stops it.
  std::shared_ptr<EmbedStreamCall> self_;
  v1::EmbedStreamRequest request_;  // the read buffer
  std::optional<metrics::Metrics::InFlightGuard> in_flight_;
  const CallLogging logging_;
  const absl::Time start_ = absl::Now();

  absl::Mutex mu_;
  StreamState state_ ABSL_GUARDED_BY(mu_) = StreamState::kReading;
  std::map<Message*, std::unique_ptr<Message>> active_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Message>> to_write_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Message> writing_ ABSL_GUARDED_BY(mu_);
  // The batchers holding this stream's requests, woken on cancellation.
  // Keyed by address, so that each is kept once.
  std::map<const batching::Batcher*, std::weak_ptr<batching::Batcher>> batchers_
      ABSL_GUARDED_BY(mu_);
  // What the access-log line reports: the messages answered OK, summed.
  AccessRecord usage_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_STREAM_CALL_H_
