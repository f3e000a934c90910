// The life of one EmbedStream call (embed_stream_call.h) as a state machine:
// one state instead of a set of flags, and every change of state in one
// table, so that which events can happen where, and what each one does, is
// read here rather than pieced together from the reactor's callbacks.
//
// States:
//   kReading     a read is outstanding (the state the stream starts in);
//   kReadPaused  no read is outstanding because max_stream_messages_in_flight
//                messages are read and not yet answered (backpressure);
//   kReadsDone   the client closed its side; answers are still being
//                written;
//   kStopping    the server shuts down: no read is started any more (one may
//                be outstanding); the messages read are answered, then the
//                stream finishes UNAVAILABLE (retryable: the client resends
//                what was not answered to another replica);
//   kCancelled   the call was cancelled or a write failed: queued work is
//                dropped, answers are discarded, a read may still be
//                outstanding;
//   kFinished    Finish() was called; the reactor waits for OnDone.
//
// Events:
//   kReadWithRoom   a message was read and fewer than the limit are in flight
//   kReadAtLimit    a message was read and the limit is reached
//   kReadFailed     a read failed: the client closed its side (or the call
//                   broke, which gRPC also reports through OnCancel)
//   kRoom           fewer than the limit are in flight (after an answer)
//   kCancel         OnCancel, or a failed write
//   kAllAnswered    no message is active and none waits to be written
//   kShutdown       the service shuts down (OpenCalls::StopStreams)
//
// Transitions: the next state, and what the reactor then does outside its
// lock. Every pair not listed keeps the state and does nothing.
//
//   kReading           + kReadWithRoom -> kReading     start the next read
//   kReading           + kReadAtLimit  -> kReadPaused
//   kReading           + kReadFailed   -> kReadsDone
//   kReadPaused        + kRoom         -> kReading     start the next read
//   kReadsDone         + kAllAnswered  -> kFinished    Finish(OK)
//   kReading           + kShutdown     -> kStopping
//   kReadPaused        + kShutdown     -> kStopping
//   kStopping          + kReadFailed   -> kReadsDone
//   kStopping          + kAllAnswered  -> kFinished    Finish(UNAVAILABLE)
//   kCancelled         + kAllAnswered  -> kFinished    Finish(CANCELLED)
//   any but kFinished  + kCancel       -> kCancelled
//
// Unlisted pairs are either no-ops by design (kRoom or kAllAnswered while a
// read is outstanding; anything after kCancel but kAllAnswered; anything
// after Finish; a message read in kStopping, which is answered UNAVAILABLE
// and keeps the stream from finishing until that answer is written; a
// shutdown once the client has closed its side, which finishes OK) or
// cannot happen (a read event where no read is
// outstanding). A message read in kCancelled or kFinished (a read that
// completed as the call was cancelled) is answered CANCELLED at once, never
// started (a text message would be answered by a tokenizer thread after
// OnDone), and its answer discarded.
#ifndef FAVOR_SERVER_SERVICE_EMBED_STREAM_STATE_H_
#define FAVOR_SERVER_SERVICE_EMBED_STREAM_STATE_H_

namespace favor::service {

enum class StreamState {
  kReading,
  kReadPaused,
  kReadsDone,
  kStopping,
  kCancelled,
  kFinished,
};

enum class StreamEvent {
  kReadWithRoom,
  kReadAtLimit,
  kReadFailed,
  kRoom,
  kCancel,
  kAllAnswered,
  kShutdown,
};

// What the reactor does on a transition, outside its lock.
enum class StreamAction {
  kNone,
  kStartRead,
  kFinishOk,
  kFinishUnavailable,
  kFinishCancelled,
};

struct StreamTransition {
  StreamState next;
  StreamAction action;
};

// The table above.
StreamTransition NextStreamState(StreamState state, StreamEvent event);

// True in the states where new messages are not run: kCancelled, kFinished.
bool StreamStopped(StreamState state);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_STREAM_STATE_H_
