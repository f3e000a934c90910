// The states of an EmbedStreamer (embed_streamer_impl.h): the sender's side
// (SendState) and the gRPC stream's (StreamState), each an enum with its
// transitions written out below, so that no mix of flags can describe a
// stream that cannot exist.
//
// SendState: whether Send is still allowed, moved by the user's calls.
//
//   state       | event                  | next
//   ------------+------------------------+-----------
//   kOpen       | CloseSend (or Finish)  | kClosed
//   kOpen       | Cancel                 | kCancelled
//   kClosed     | Cancel                 | kCancelled
//   otherwise the state stays (CloseSend is idempotent; kCancelled is final)
//
// kCancelled also means that refused messages are not sent again.
//
// StreamState: the write side of the stream and its end, moved by the
// reactor. The reactor holds the call open (AddHold) while a write may still
// start, because writes are started from any thread; the transitions marked
// "release" close the write side and must be followed by RemoveHold(),
// exactly once per stream, after which gRPC may call OnDone.
//
//   state              | event            | next               | release
//   -------------------+------------------+--------------------+--------
//   kOpen              | kWriteStarted    | kWriting           |
//   kOpen              | kWritesDone      | kWritesClosed      | yes
//   kOpen              | kReadsEnded      | kWritesClosed      | yes
//   kWriting           | kWriteOk         | kOpen              |
//   kWriting           | kWriteFailed     | kWritesClosed      | yes
//   kWriting           | kReadsEnded      | kBrokenWhileWriting|
//   kBrokenWhileWriting| kWriteOk         | kWritesClosed      | yes
//   kBrokenWhileWriting| kWriteFailed     | kWritesClosed      | yes
//   kWritesClosed      | kReadsEnded      | kWritesClosed      |
//   any                | kDone            | kDone              |
//   any other pair cannot happen (the reactor starts a write or WritesDone
//   only in kOpen, gets one OnWriteDone per write and one end of the reads);
//   it leaves the state as it is.
#ifndef FAVOR_CLIENT_SRC_EMBED_STREAM_STATE_H_
#define FAVOR_CLIENT_SRC_EMBED_STREAM_STATE_H_

namespace favor::client_internal {

enum class SendState {
  // Send is allowed.
  kOpen,
  // CloseSend or Finish: no more Send; sent messages are still answered.
  kClosed,
  // Cancel: no more Send, no more retries; the stream is being cancelled.
  kCancelled,
};

enum class SendEvent { kCloseSend, kCancel };

SendState NextSendState(SendState state, SendEvent event);

enum class StreamState {
  // Writes may start; none is in progress.
  kOpen,
  // One write is in progress (gRPC allows one at a time).
  kWriting,
  // The reads ended (the stream is broken) while a write was in progress:
  // the write side closes when that write completes.
  kBrokenWhileWriting,
  // No write will start any more and the hold is released: WritesDone was
  // sent, or the stream broke. OnDone is due.
  kWritesClosed,
  // OnDone ran: the stream's final status is known.
  kDone,
};

enum class StreamEvent {
  // StartWrite of a message.
  kWriteStarted,
  // StartWritesDone: sending is closed and every message is answered.
  kWritesDone,
  // OnWriteDone(true) and OnWriteDone(false).
  kWriteOk,
  kWriteFailed,
  // OnReadDone(false): the server will send nothing more.
  kReadsEnded,
  // OnDone.
  kDone,
};

struct StreamTransition {
  StreamState next;
  // The write side has just closed: RemoveHold() is due.
  bool release_hold = false;
};

StreamTransition NextStreamState(StreamState state, StreamEvent event);

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_EMBED_STREAM_STATE_H_
