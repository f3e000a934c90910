// OpenCalls: what the shutdown waits for (calls accepted before draining)
// and how it stops streams (each once, none freed under it, no lock held).
#include "server/service/open_calls.h"

#include <memory>
#include <thread>

#include "gtest/gtest.h"

namespace favor::service {
namespace {

// A stream that counts its stops, and may end itself from inside one (as a
// stream that finishes at once does, when gRPC runs OnDone on that thread).
class FakeStream final : public OpenCalls::Stoppable {
 public:
  explicit FakeStream(OpenCalls* calls, bool end_when_stopped = false)
      : calls_(calls), end_when_stopped_(end_when_stopped) {}
  void StopForShutdown() override {
    ++stops;
    if (end_when_stopped_) calls_->End(this);
  }
  int stops = 0;

 private:
  OpenCalls* const calls_;
  const bool end_when_stopped_;
};

TEST(OpenCallsTest, CountsAcceptedCallsUntilTheyEnd) {
  OpenCalls calls;
  ASSERT_TRUE(calls.Begin());
  ASSERT_TRUE(calls.Begin());
  EXPECT_EQ(calls.num_open(), 2);
  calls.End();
  EXPECT_EQ(calls.num_open(), 1);
  EXPECT_FALSE(calls.WaitUntilNoneOpen(absl::Milliseconds(10)));
  calls.End();
  EXPECT_TRUE(calls.WaitUntilNoneOpen(absl::ZeroDuration()));
}

TEST(OpenCallsTest, RefusesAndDoesNotCountCallsOnceStopped) {
  OpenCalls calls;
  ASSERT_TRUE(calls.Begin());
  EXPECT_TRUE(calls.accepting());
  calls.StopAccepting();
  calls.StopAccepting();  // idempotent
  EXPECT_FALSE(calls.accepting());
  EXPECT_FALSE(calls.Begin());
  auto stream = std::make_shared<FakeStream>(&calls);
  EXPECT_FALSE(calls.Begin(stream));
  EXPECT_EQ(calls.num_open(), 1);
  calls.StopStreams();
  EXPECT_EQ(stream->stops, 0);  // never registered
}

TEST(OpenCallsTest, WaitReturnsWhenTheLastCallEnds) {
  OpenCalls calls;
  ASSERT_TRUE(calls.Begin());
  calls.StopAccepting();
  std::thread ender([&] {
    // A sleep on purpose: the call should end while the wait below is
    // already blocked, so that its wake-up is what is tested (ending first
    // would pass too, without testing it).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    calls.End();
  });
  EXPECT_TRUE(calls.WaitUntilNoneOpen(absl::Seconds(30)));
  ender.join();
}

TEST(OpenCallsTest, StopsEachLiveStreamOnce) {
  OpenCalls calls;
  auto first = std::make_shared<FakeStream>(&calls);
  auto second = std::make_shared<FakeStream>(&calls);
  auto ended = std::make_shared<FakeStream>(&calls);
  ASSERT_TRUE(calls.Begin(first));
  ASSERT_TRUE(calls.Begin(second));
  ASSERT_TRUE(calls.Begin(ended));
  calls.End(ended.get());
  calls.StopAccepting();
  calls.StopStreams();
  calls.StopStreams();
  EXPECT_EQ(first->stops, 1);
  EXPECT_EQ(second->stops, 1);
  EXPECT_EQ(ended->stops, 0);
  EXPECT_EQ(calls.num_open(), 2);
}

TEST(OpenCallsTest, HoldsStreamsWeakly) {
  OpenCalls calls;
  auto stream = std::make_shared<FakeStream>(&calls);
  std::weak_ptr<FakeStream> watch = stream;
  ASSERT_TRUE(calls.Begin(stream));
  stream.reset();
  EXPECT_TRUE(watch.expired());
  calls.StopStreams();  // nothing left to stop, nothing touched
  EXPECT_EQ(calls.num_open(), 1);
}

TEST(OpenCallsTest, AStreamMayEndWhileItIsStoppedAndIsFreedAfter) {
  OpenCalls calls;
  auto stream = std::make_shared<FakeStream>(&calls, /*end_when_stopped=*/true);
  ASSERT_TRUE(calls.Begin(stream));
  // End() from inside StopForShutdown() takes the lock again: StopStreams()
  // must not hold it then (a deadlock otherwise).
  calls.StopStreams();
  EXPECT_EQ(stream->stops, 1);
  EXPECT_EQ(calls.num_open(), 0);
  EXPECT_EQ(stream.use_count(), 1);  // StopStreams() let go of it
}

}  // namespace
}  // namespace favor::service
