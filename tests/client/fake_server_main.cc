// favor_client_fake_server: a FavorService with a FakeModel ("fake") and
// the health service on 127.0.0.1, for tests that run a separate client
// program (consumer_test.sh). Prints "port=<n>" on stdout once serving and
// runs until SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>

#include "tests/service/test_server.h"

int main() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  // Blocked before gRPC starts its threads, so that sigwait gets them.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  favor::service::testing::FakeModel model("fake");
  favor::service::testing::TestServerOptions options;
  options.health = true;
  favor::service::testing::TestServer server(
      favor::service::FavorService::Options(), {&model}, options);
  std::printf("port=%d\n", server.port());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  return 0;
}
