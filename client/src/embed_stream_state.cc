#include "embed_stream_state.h"

namespace favor::client_internal {
namespace {

struct StreamRow {
  StreamState state;
  StreamEvent event;
  StreamState next;
  bool release_hold;
};

// The table of embed_stream_state.h, row for row (kDone is handled apart:
// it is reached from every state).
constexpr StreamRow kStreamTable[] = {
    {StreamState::kOpen, StreamEvent::kWriteStarted, StreamState::kWriting,
     false},
    {StreamState::kOpen, StreamEvent::kWritesDone, StreamState::kWritesClosed,
     true},
    {StreamState::kOpen, StreamEvent::kReadsEnded, StreamState::kWritesClosed,
     true},
    {StreamState::kWriting, StreamEvent::kWriteOk, StreamState::kOpen, false},
    {StreamState::kWriting, StreamEvent::kWriteFailed,
     StreamState::kWritesClosed, true},
    {StreamState::kWriting, StreamEvent::kReadsEnded,
     StreamState::kBrokenWhileWriting, false},
    {StreamState::kBrokenWhileWriting, StreamEvent::kWriteOk,
     StreamState::kWritesClosed, true},
    {StreamState::kBrokenWhileWriting, StreamEvent::kWriteFailed,
     StreamState::kWritesClosed, true},
    {StreamState::kWritesClosed, StreamEvent::kReadsEnded,
     StreamState::kWritesClosed, false},
};

}  // namespace

SendState NextSendState(SendState state, SendEvent event) {
  if (event == SendEvent::kCancel) return SendState::kCancelled;
  return state == SendState::kOpen ? SendState::kClosed : state;
}

StreamTransition NextStreamState(StreamState state, StreamEvent event) {
  if (event == StreamEvent::kDone) return {StreamState::kDone, false};
  for (const StreamRow& row : kStreamTable) {
    if (row.state == state && row.event == event) {
      return {row.next, row.release_hold};
    }
  }
  return {state, false};
}

}  // namespace favor::client_internal
