#include "server/service/embed_stream_state.h"

namespace favor::service {

// One case per line of the header's list.
StreamTransition NextStreamState(StreamState state, StreamEvent event) {
  using Action = StreamAction;
  using Event = StreamEvent;
  using State = StreamState;
  if (event == Event::kCancel && state != State::kFinished) {
    return {State::kCancelled, Action::kNone};
  }
  switch (state) {
    case State::kReading:
      if (event == Event::kReadWithRoom) return {state, Action::kStartRead};
      if (event == Event::kReadAtLimit)
        return {State::kReadPaused, Action::kNone};
      if (event == Event::kReadFailed)
        return {State::kReadsDone, Action::kNone};
      break;
    case State::kReadPaused:
      if (event == Event::kRoom) return {State::kReading, Action::kStartRead};
      break;
    case State::kReadsDone:
      if (event == Event::kAllAnswered) {
        return {State::kFinished, Action::kFinishOk};
      }
      break;
    case State::kCancelled:
      if (event == Event::kAllAnswered) {
        return {State::kFinished, Action::kFinishCancelled};
      }
      break;
    case State::kFinished:
      break;
  }
  return {state, Action::kNone};
}

bool StreamStopped(StreamState state) {
  return state == StreamState::kCancelled || state == StreamState::kFinished;
}

}  // namespace favor::service
