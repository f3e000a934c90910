// ClientGone (server/http/client_gone.h) on its own: a listener runs once,
// whether it comes before or after the signal, and a later one replaces it.
#include "server/http/client_gone.h"

#include <thread>

#include "gtest/gtest.h"

namespace favor::http {
namespace {

TEST(ClientGoneTest, AListenerRunsOnceWhenTheClientGoes) {
  ClientGone client;
  int ran = 0;
  client.Listen([&ran] { ++ran; });
  EXPECT_FALSE(client.gone());
  EXPECT_EQ(ran, 0);
  client.Signal();
  client.Signal();
  EXPECT_TRUE(client.gone());
  EXPECT_EQ(ran, 1);
}

TEST(ClientGoneTest, AListenerAfterTheSignalRunsAtOnce) {
  ClientGone client;
  client.Signal();
  int ran = 0;
  client.Listen([&ran] { ++ran; });
  EXPECT_EQ(ran, 1);
}

TEST(ClientGoneTest, ALaterListenerReplacesOneThatHasNotRun) {
  ClientGone client;
  int first = 0, second = 0;
  client.Listen([&first] { ++first; });
  client.Listen([&second] { ++second; });
  client.Signal();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

// The listener may run on the signalling thread, and may take locks of its
// own: Signal holds none of ClientGone's while it runs.
TEST(ClientGoneTest, TheListenerRunsOutsideTheLockOnTheSignallingThread) {
  ClientGone client;
  bool gone_seen = false;
  std::thread::id ran_on;
  client.Listen([&] {
    gone_seen = client.gone();  // would deadlock under the lock
    ran_on = std::this_thread::get_id();
  });
  std::thread signaller([&client] { client.Signal(); });
  const std::thread::id signaller_id = signaller.get_id();
  signaller.join();
  EXPECT_TRUE(gone_seen);
  EXPECT_EQ(ran_on, signaller_id);
}

}  // namespace
}  // namespace favor::http
