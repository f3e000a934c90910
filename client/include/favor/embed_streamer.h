// favor::EmbedStreamer: many Embed calls in flight over one EmbedStream,
// for high-throughput clients (favor-bench, bulk indexing). Made by
// Client::OpenEmbedStream.
//
//   auto streamer = client->OpenEmbedStream();          // StatusOr
//   for (const auto& batch : batches) (*streamer)->Send(batch);
//   (*streamer)->CloseSend();
//   while (auto r = (*streamer)->Next()) Use(r->id, r->result);
//   absl::Status status = (*streamer)->Finish();
//
// Flow control: at most max_in_flight messages are sent and unanswered at a
// time; Send blocks while the limit is reached, until an answer arrives.
// Answers come back in completion order (not in Send order), each tagged
// with the id that Send returned. A message that fails (INVALID_ARGUMENT,
// DEADLINE_EXCEEDED, ...) is answered with its own status and the stream
// goes on. A message refused with RESOURCE_EXHAUSTED or UNAVAILABLE is sent
// again on the same stream under ClientOptions.retry, waiting at least the
// server's hint (Status.retry_after_micros) and never past the message's
// deadline. When the stream itself breaks, every unanswered message is
// answered with the stream's status.
//
// Thread-safe: Send, Next, CloseSend, Finish and Cancel may be called from
// different threads (one sender and one receiver is the usual pattern).
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_STREAMER_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_STREAMER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "favor/embed.h"

namespace favor {

// The answer to one message of an EmbedStreamer.
struct StreamedEmbedResult {
  // What Send returned for the message.
  uint64_t id = 0;
  // Its result, or why there is none (the server's code and message).
  absl::StatusOr<EmbedResult> result;
  // Attempts made for the message (1 without retries).
  int attempts = 1;
};

struct EmbedStreamOptions {
  // Most messages sent and not yet answered; Send blocks at the limit.
  // At least 1.
  int max_in_flight = 64;
  // Deadline of the whole stream from its opening; absl::InfiniteDuration()
  // (the default) means none. When it passes, the stream ends with
  // DEADLINE_EXCEEDED and so do its unanswered messages.
  absl::Duration stream_timeout = absl::InfiniteDuration();
  // Deadline of each message, counted from its Send, retries included, and
  // sent to the server as the message's timeout_micros; zero means
  // ClientOptions.default_timeout, absl::InfiniteDuration() means only the
  // stream's deadline.
  absl::Duration message_timeout = absl::ZeroDuration();
  // When set, each answer is handed to it as it arrives, one at a time, on
  // one of gRPC's threads or the client's timer thread (keep it short, and
  // do not destroy the streamer from it), and Next() returns nothing. When
  // not set, answers wait in an unbounded queue for Next().
  std::function<void(StreamedEmbedResult)> on_result;
};

class EmbedStreamer {
 public:
  // Cancels the stream if it is still open (unanswered messages are
  // answered CANCELLED) and waits until it has ended; no callback runs after
  // the destructor returns.
  ~EmbedStreamer();
  EmbedStreamer(const EmbedStreamer&) = delete;
  EmbedStreamer& operator=(const EmbedStreamer&) = delete;

  // Sends one Embed call (the inputs and options are copied): texts or
  // token ids with spans (EmbedInput), or plain id sequences. Blocks while
  // max_in_flight messages are unanswered. Returns the id its answer will
  // carry: 0, 1, 2, ... in the order of the Send calls. INVALID_ARGUMENT,
  // and nothing sent, for a text that is not valid UTF-8. FAILED_PRECONDITION
  // after CloseSend, Finish or Cancel; the stream's status once it has
  // ended.
  absl::StatusOr<uint64_t> Send(absl::Span<const EmbedInput> inputs,
                                const EmbedOptions& options = {});
  absl::StatusOr<uint64_t> Send(absl::Span<const TokenIds> inputs,
                                const EmbedOptions& options = {});

  // The next answer, in completion order, waiting for one if none is there.
  // nullopt when no answer can come any more: sending is closed (CloseSend,
  // Finish, Cancel, or the stream ended) and every message's answer has
  // been handed out; and always nullopt with on_result set. Single-threaded
  // callers either Send n messages and call Next n times, or CloseSend
  // first and call Next until nullopt.
  std::optional<StreamedEmbedResult> Next();

  // No more Send; the messages already sent are still answered. Idempotent.
  void CloseSend();

  // CloseSend, then waits until every message has been answered (answers
  // not yet taken stay available to Next) and the stream has ended. Returns
  // the stream's own final status: OK when it ended normally, whatever the
  // individual messages' results were.
  absl::Status Finish();

  // Ends the stream now: the server drops its queued work and every
  // unanswered message is answered CANCELLED. Does not wait.
  void Cancel();

  // Messages sent (or waiting to be sent again) and not yet answered.
  int in_flight() const;

  // Implementation details follow.
  class Impl;
  explicit EmbedStreamer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_EMBED_STREAMER_H_
