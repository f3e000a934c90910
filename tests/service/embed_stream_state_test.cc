// The EmbedStream state machine on its own: the transition table of
// embed_stream_state.h, event by event.
#include "server/service/embed_stream_state.h"

#include <vector>

#include "gtest/gtest.h"

namespace favor::service {
namespace {

using Action = StreamAction;
using Event = StreamEvent;
using State = StreamState;

constexpr State kAllStates[] = {State::kReading, State::kReadPaused,
                                State::kReadsDone, State::kCancelled,
                                State::kFinished};
constexpr Event kAllEvents[] = {Event::kReadWithRoom, Event::kReadAtLimit,
                                Event::kReadFailed,   Event::kRoom,
                                Event::kCancel,       Event::kAllAnswered};

// Applies `events` from kReading; returns the actions taken, in order.
std::vector<Action> Apply(const std::vector<Event>& events, State* state) {
  *state = State::kReading;
  std::vector<Action> actions;
  for (const Event event : events) {
    const StreamTransition transition = NextStreamState(*state, event);
    *state = transition.next;
    if (transition.action != Action::kNone)
      actions.push_back(transition.action);
  }
  return actions;
}

TEST(EmbedStreamStateTest, ReadsPausesAtTheLimitResumesAndFinishesOk) {
  State state;
  const std::vector<Action> actions = Apply(
      {Event::kReadWithRoom, Event::kReadAtLimit, Event::kAllAnswered,
       Event::kRoom, Event::kReadFailed, Event::kRoom, Event::kAllAnswered},
      &state);
  EXPECT_EQ(actions,
            (std::vector<Action>{Action::kStartRead, Action::kStartRead,
                                 Action::kFinishOk}));
  EXPECT_EQ(state, State::kFinished);
}

TEST(EmbedStreamStateTest, NoFinishWhileTheClientMayStillSend) {
  // Nothing in flight, but the client has not closed its side: a read is
  // outstanding (kReading) or will be once there is room (kReadPaused).
  for (const State state : {State::kReading, State::kReadPaused}) {
    const StreamTransition transition =
        NextStreamState(state, Event::kAllAnswered);
    EXPECT_EQ(transition.next, state);
    EXPECT_EQ(transition.action, Action::kNone);
  }
}

TEST(EmbedStreamStateTest, RoomResumesOnlyAPausedStream) {
  for (const State state : kAllStates) {
    const StreamTransition transition = NextStreamState(state, Event::kRoom);
    if (state == State::kReadPaused) {
      EXPECT_EQ(transition.next, State::kReading);
      EXPECT_EQ(transition.action, Action::kStartRead);
    } else {
      // kReading already has a read outstanding: a second one is a bug.
      EXPECT_EQ(transition.next, state);
      EXPECT_EQ(transition.action, Action::kNone);
    }
  }
}

TEST(EmbedStreamStateTest, CancelWinsFromEveryStateButFinished) {
  for (const State state : kAllStates) {
    const StreamTransition transition = NextStreamState(state, Event::kCancel);
    EXPECT_EQ(transition.next,
              state == State::kFinished ? State::kFinished : State::kCancelled);
    EXPECT_EQ(transition.action, Action::kNone);
  }
}

TEST(EmbedStreamStateTest, ACancelledStreamReadsNoMoreAndFinishesCancelled) {
  for (const Event event : kAllEvents) {
    const StreamTransition transition =
        NextStreamState(State::kCancelled, event);
    if (event == Event::kAllAnswered) {
      EXPECT_EQ(transition.next, State::kFinished);
      EXPECT_EQ(transition.action, Action::kFinishCancelled);
    } else {
      EXPECT_EQ(transition.next, State::kCancelled);
      EXPECT_EQ(transition.action, Action::kNone);
    }
  }
}

TEST(EmbedStreamStateTest, AFinishedStreamIgnoresEverything) {
  for (const Event event : kAllEvents) {
    const StreamTransition transition =
        NextStreamState(State::kFinished, event);
    EXPECT_EQ(transition.next, State::kFinished);
    EXPECT_EQ(transition.action, Action::kNone);
  }
}

TEST(EmbedStreamStateTest, StoppedOnceCancelled) {
  for (const State state : kAllStates) {
    EXPECT_EQ(StreamStopped(state),
              state == State::kCancelled || state == State::kFinished);
  }
}

TEST(EmbedStreamStateTest, ShutdownStopsReadingAnswersThenFinishesUnavailable) {
  State state;
  // A message read, the shutdown, the client's next message (answered
  // UNAVAILABLE by the service), then nothing left: no read is started
  // after the shutdown, and the stream finishes UNAVAILABLE.
  const std::vector<Action> actions =
      Apply({Event::kReadWithRoom, Event::kShutdown, Event::kReadWithRoom,
             Event::kRoom, Event::kAllAnswered},
            &state);
  EXPECT_EQ(actions, (std::vector<Action>{Action::kStartRead,
                                          Action::kFinishUnavailable}));
  EXPECT_EQ(state, State::kFinished);
  // From a paused stream too, which starts no read either.
  EXPECT_EQ(Apply({Event::kReadAtLimit, Event::kShutdown, Event::kRoom,
                   Event::kAllAnswered},
                  &state),
            (std::vector<Action>{Action::kFinishUnavailable}));
}

TEST(EmbedStreamStateTest, ShutdownKeepsOkForAClientThatClosedItsSide) {
  State state;
  EXPECT_EQ(Apply({Event::kReadFailed, Event::kShutdown, Event::kAllAnswered},
                  &state),
            (std::vector<Action>{Action::kFinishOk}));
  // The client closes its side while the stream stops: OK as well.
  EXPECT_EQ(Apply({Event::kShutdown, Event::kReadFailed, Event::kAllAnswered},
                  &state),
            (std::vector<Action>{Action::kFinishOk}));
}

TEST(EmbedStreamStateTest, ShutdownNeitherUndoesACancelNorRunsTwice) {
  State state;
  EXPECT_EQ(
      Apply({Event::kCancel, Event::kShutdown, Event::kAllAnswered}, &state),
      (std::vector<Action>{Action::kFinishCancelled}));
  EXPECT_EQ(
      Apply({Event::kShutdown, Event::kCancel, Event::kAllAnswered}, &state),
      (std::vector<Action>{Action::kFinishCancelled}));
  EXPECT_EQ(NextStreamState(State::kStopping, Event::kShutdown).next,
            State::kStopping);
  EXPECT_FALSE(StreamStopped(State::kStopping));
}

}  // namespace
}  // namespace favor::service
