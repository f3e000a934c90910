// EmbedStreamer::Impl: the ClientBidiReactor behind favor::EmbedStreamer.
// embed_streamer.cc holds what the user calls (Send, Next, CloseSend, Finish,
// Cancel, Shutdown); embed_stream_reactions.cc what gRPC and the client's
// timer call (writes, reads, the end of the stream, retries, deadlines).
//
// Locking: mu_ guards the state; no gRPC Start* call and no on_result
// callback is made while mu_ is held (gRPC may run a reaction on the
// calling thread), so every method decides under the lock and acts after
// it.
//
// State: send_state_ and stream_state_, two enums whose transitions are
// written out in embed_stream_state.h. Writes are started from any thread
// (Send, the retry timer, reactions), so the reactor holds the call open
// (AddHold) until its write side is closed: after WritesDone, or once the
// stream is broken (a failed write or the end of the reads) and no write is
// in progress. Only then can OnDone come.
#ifndef FAVOR_CLIENT_SRC_EMBED_STREAMER_IMPL_H_
#define FAVOR_CLIENT_SRC_EMBED_STREAMER_IMPL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client_impl.h"
#include "embed_stream_state.h"
#include "favor/embed_streamer.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/client_callback.h"
#include "timer.h"

namespace favor {

class EmbedStreamer::Impl final
    : public grpc::ClientBidiReactor<v1::EmbedStreamRequest,
                                     v1::EmbedStreamResponse> {
 public:
  Impl(Client::Impl* client, EmbedStreamOptions options);

  // Opens the stream on the client's next channel.
  void Start();

  // EmbedStreamer's methods; Send takes the message with its Embed call
  // (request) set.
  absl::StatusOr<uint64_t> Send(v1::EmbedStreamRequest request);
  std::optional<StreamedEmbedResult> Next();
  void CloseSend();
  absl::Status Finish();
  void Cancel();
  int in_flight() const;
  // Cancels the stream unless it has ended, waits for OnDone, and stops
  // the retry waits still pending.
  void Shutdown();

  // The reactions (embed_stream_reactions.cc).
  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  using TimerId = client_internal::Timer::Id;

  struct Message {
    v1::EmbedStreamRequest request;
    absl::Time deadline = absl::InfiniteFuture();
    int attempts = 0;
    // The timer that answers it DEADLINE_EXCEEDED at its deadline; 0: none.
    TimerId deadline_timer = 0;
  };

  // What MaybeWrite does once it has let go of mu_.
  enum class WriteStep { kNothing, kWrite, kWritesDone };

  // --- embed_streamer.cc ---
  absl::Time MessageDeadline() const;
  // Stores a message under the next id, with its deadline timer, and queues
  // it for writing; returns the id.
  uint64_t AddMessageLocked(v1::EmbedStreamRequest request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // --- embed_stream_reactions.cc ---
  // Moves stream_state_; true when the caller must then RemoveHold().
  bool ApplyLocked(client_internal::StreamEvent event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the next write, or WritesDone once sending is closed and every
  // message is answered; at most one at a time.
  void MaybeWrite();
  // Picks what MaybeWrite does: the next queued message still within its
  // deadline goes to writing_message_ (those past it are answered into
  // `expired`).
  WriteStep NextWriteLocked(std::vector<StreamedEmbedResult>* expired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the message `id` out (it has its answer): its answer goes to
  // Next()'s queue, or into `answers` for on_result.
  void AnswerLocked(uint64_t id, absl::StatusOr<EmbedResult> result,
                    std::vector<StreamedEmbedResult>* answers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands answers to on_result, one at a time.
  void Deliver(std::vector<StreamedEmbedResult> answers);
  void HandleResponse(std::vector<StreamedEmbedResult>* answers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnRetryTime(uint64_t id, TimerId timer);
  void OnDeadline(uint64_t id, TimerId timer);
  // Schedules `task(its timer id)` on the client's timer at `when`, records
  // it in timers_ and returns its id.
  TimerId ScheduleLocked(absl::Time when, std::function<void(TimerId)> task)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Cancels the deadline timers of answered messages (Timer::Cancel may
  // wait for a running task, which takes mu_: so never under mu_).
  void CancelAnsweredTimers() ABSL_LOCKS_EXCLUDED(mu_);

  Client::Impl* const client_;
  const EmbedStreamOptions options_;
  const absl::Time stream_deadline_;
  grpc::ClientContext context_;
  // Only OnReadDone touches it between reads.
  v1::EmbedStreamResponse response_;
  std::promise<void> done_promise_;
  std::future<void> done_future_;
  // Serialises on_result calls.
  absl::Mutex deliver_mu_;

  mutable absl::Mutex mu_;
  client_internal::SendState send_state_ ABSL_GUARDED_BY(mu_) =
      client_internal::SendState::kOpen;
  client_internal::StreamState stream_state_ ABSL_GUARDED_BY(mu_) =
      client_internal::StreamState::kOpen;
  // Set in kDone.
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Message> outstanding_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> write_queue_ ABSL_GUARDED_BY(mu_);
  // The message being written; gRPC reads it until OnWriteDone.
  v1::EmbedStreamRequest writing_message_ ABSL_GUARDED_BY(mu_);
  std::deque<StreamedEmbedResult> results_ ABSL_GUARDED_BY(mu_);
  // Pending retry waits and message deadlines on the client's timer.
  std::set<TimerId> timers_ ABSL_GUARDED_BY(mu_);
  std::vector<TimerId> timers_to_cancel_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor

#endif  // FAVOR_CLIENT_SRC_EMBED_STREAMER_IMPL_H_
