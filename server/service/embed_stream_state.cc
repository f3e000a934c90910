#include "server/service/embed_stream_state.h"

namespace favor::service {
namespace {

using A = StreamAction;
using E = StreamEvent;
using S = StreamState;

struct Row {
  S state;
  E event;
  StreamTransition transition;
};

// The header's list, line by line, but for its last line (kCancel).
constexpr Row kTable[] = {
    {S::kReading, E::kReadWithRoom, {S::kReading, A::kStartRead}},
    {S::kReading, E::kReadAtLimit, {S::kReadPaused, A::kNone}},
    {S::kReading, E::kReadFailed, {S::kReadsDone, A::kNone}},
    {S::kReadPaused, E::kRoom, {S::kReading, A::kStartRead}},
    {S::kReadsDone, E::kAllAnswered, {S::kFinished, A::kFinishOk}},
    {S::kReading, E::kShutdown, {S::kStopping, A::kNone}},
    {S::kReadPaused, E::kShutdown, {S::kStopping, A::kNone}},
    {S::kStopping, E::kReadFailed, {S::kReadsDone, A::kNone}},
    {S::kStopping, E::kAllAnswered, {S::kFinished, A::kFinishUnavailable}},
    {S::kCancelled, E::kAllAnswered, {S::kFinished, A::kFinishCancelled}},
};

}  // namespace

StreamTransition NextStreamState(StreamState state, StreamEvent event) {
  if (event == E::kCancel && state != S::kFinished) {
    return {S::kCancelled, A::kNone};
  }
  for (const Row& row : kTable) {
    if (row.state == state && row.event == event) return row.transition;
  }
  return {state, A::kNone};
}

bool StreamStopped(StreamState state) {
  return state == StreamState::kCancelled || state == StreamState::kFinished;
}

}  // namespace favor::service
