// EmbedStreamer's two state machines (src/embed_stream_state.h): every
// (state, event) pair against the tables written in the header.
#include "embed_stream_state.h"

#include <map>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace favor::client_internal {
namespace {

constexpr StreamState kStreamStates[] = {
    StreamState::kOpen, StreamState::kWriting, StreamState::kBrokenWhileWriting,
    StreamState::kWritesClosed, StreamState::kDone};
constexpr StreamEvent kStreamEvents[] = {
    StreamEvent::kWriteStarted, StreamEvent::kWritesDone, StreamEvent::kWriteOk,
    StreamEvent::kWriteFailed,  StreamEvent::kReadsEnded, StreamEvent::kDone};

TEST(EmbedStreamStateTest, StreamTransitionsAreTheHeadersTable) {
  using S = StreamState;
  using E = StreamEvent;
  // The header's table; kDone from any state is checked below.
  const std::map<std::pair<S, E>, std::pair<S, bool>> table = {
      {{S::kOpen, E::kWriteStarted}, {S::kWriting, false}},
      {{S::kOpen, E::kWritesDone}, {S::kWritesClosed, true}},
      {{S::kOpen, E::kReadsEnded}, {S::kWritesClosed, true}},
      {{S::kWriting, E::kWriteOk}, {S::kOpen, false}},
      {{S::kWriting, E::kWriteFailed}, {S::kWritesClosed, true}},
      {{S::kWriting, E::kReadsEnded}, {S::kBrokenWhileWriting, false}},
      {{S::kBrokenWhileWriting, E::kWriteOk}, {S::kWritesClosed, true}},
      {{S::kBrokenWhileWriting, E::kWriteFailed}, {S::kWritesClosed, true}},
      {{S::kWritesClosed, E::kReadsEnded}, {S::kWritesClosed, false}},
  };
  for (S state : kStreamStates) {
    for (E event : kStreamEvents) {
      const StreamTransition transition = NextStreamState(state, event);
      std::pair<S, bool> expected = {state, false};  // cannot happen: stays
      if (event == E::kDone) {
        expected = {S::kDone, false};
      } else if (const auto row = table.find({state, event});
                 row != table.end()) {
        expected = row->second;
      }
      EXPECT_EQ(transition.next, expected.first)
          << "state " << static_cast<int>(state) << " event "
          << static_cast<int>(event);
      EXPECT_EQ(transition.release_hold, expected.second)
          << "state " << static_cast<int>(state) << " event "
          << static_cast<int>(event);
    }
  }
}

// Every path through the write side releases the hold exactly once.
TEST(EmbedStreamStateTest, EveryStreamReleasesTheHoldOnce) {
  using E = StreamEvent;
  const std::vector<std::vector<E>> lives = {
      {E::kWritesDone, E::kReadsEnded, E::kDone},
      {E::kWriteStarted, E::kWriteOk, E::kWritesDone, E::kReadsEnded, E::kDone},
      {E::kWriteStarted, E::kWriteFailed, E::kReadsEnded, E::kDone},
      {E::kWriteStarted, E::kReadsEnded, E::kWriteOk, E::kDone},
      {E::kWriteStarted, E::kReadsEnded, E::kWriteFailed, E::kDone},
      {E::kReadsEnded, E::kDone},
  };
  for (const std::vector<E>& life : lives) {
    StreamState state = StreamState::kOpen;
    int releases = 0;
    for (E event : life) {
      const StreamTransition transition = NextStreamState(state, event);
      state = transition.next;
      releases += transition.release_hold ? 1 : 0;
    }
    EXPECT_EQ(state, StreamState::kDone);
    EXPECT_EQ(releases, 1) << "a life of " << life.size() << " events";
  }
}

TEST(EmbedStreamStateTest, SendTransitions) {
  using S = SendState;
  EXPECT_EQ(NextSendState(S::kOpen, SendEvent::kCloseSend), S::kClosed);
  EXPECT_EQ(NextSendState(S::kClosed, SendEvent::kCloseSend), S::kClosed);
  EXPECT_EQ(NextSendState(S::kOpen, SendEvent::kCancel), S::kCancelled);
  EXPECT_EQ(NextSendState(S::kClosed, SendEvent::kCancel), S::kCancelled);
  // Cancelled is final: a later CloseSend (Finish) keeps it.
  EXPECT_EQ(NextSendState(S::kCancelled, SendEvent::kCloseSend), S::kCancelled);
}

}  // namespace
}  // namespace favor::client_internal
