#include "server/app/shutdown.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "glog/logging.h"

namespace favor {
namespace {

// Answers whose status is already on its way (the drain has answered every
// call) get at least this long to reach the wire, even with
// --drain_timeout_seconds=0: the process ends within the drain timeout plus
// this (docs/deployment.md sizes the pods' grace period on it).
constexpr absl::Duration kMinAnswerFlushTime = absl::Seconds(1);

int shutdown_pipe[2] = {-1, -1};

void OnShutdownSignal(int signal) {
  const char byte = static_cast<char>(signal);
  (void)!write(shutdown_pipe[1], &byte, 1);
}

}  // namespace

absl::Status InstallShutdownSignalHandlers() {
  if (pipe(shutdown_pipe) != 0) {
    return absl::InternalError("cannot create the shutdown signal pipe");
  }
  struct sigaction action = {};
  action.sa_handler = OnShutdownSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
  return absl::OkStatus();
}

int WaitForShutdownSignal() {
  int signal = 0;
  while (signal == 0 || signal == SIGHUP) {
    signal = WaitForSignal(absl::InfiniteDuration());
  }
  return signal;
}

int WaitForSignal(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return 0;
    pollfd ready = {shutdown_pipe[0], POLLIN, 0};
    const int millis = left == absl::InfiniteDuration()
                           ? -1
                           : static_cast<int>(std::min<int64_t>(
                                 absl::ToInt64Milliseconds(left) + 1, 1 << 30));
    if (poll(&ready, 1, millis) <= 0) continue;  // Timeout or EINTR.
    char byte = 0;
    if (read(shutdown_pipe[0], &byte, 1) == 1) return byte;
  }
}

void DrainAndExit(DrainOptions options) {
  const absl::Time start = absl::Now();
  options.set_not_serving();
  options.service->StartDraining();
  // The batchers answer what is queued at the drain deadline, but a batch
  // computing then is never interrupted, and Shutdown() waits for it: it
  // runs beside this thread, which goes on at the deadline. The calls of
  // that batch see their connection close (UNAVAILABLE) when the process
  // exits; the process is not held for them.
  auto shut_down = std::make_shared<absl::Notification>();
  std::thread([service = options.service, timeout = options.drain_timeout,
               shut_down] {
    service->Shutdown(timeout);
    shut_down->Notify();
  }).detach();
  const bool batches_done =
      shut_down->WaitForNotificationWithDeadline(start + options.drain_timeout);
  if (!batches_done) {
    LOG(WARNING) << "event=drain_deadline_passed batches_still_computing=true "
                    "(their calls are answered by the connection closing)";
  }
  const absl::Time drained = absl::Now();
  // The whole shutdown takes at most drain_timeout + kMinAnswerFlushTime
  // (what deployments size their grace period on).
  const absl::Time flush_deadline =
      std::max(start + options.drain_timeout, drained + kMinAnswerFlushTime);
  const bool sent =
      options.service->WaitForOpenCalls(flush_deadline - absl::Now());
  if (options.http != nullptr) {
    options.http->Shutdown(
        std::max(flush_deadline - absl::Now(), absl::ZeroDuration()));
  }
  LOG(INFO) << "event=drained seconds="
            << absl::ToDoubleSeconds(drained - start)
            << " answers_sent_seconds="
            << absl::ToDoubleSeconds(absl::Now() - start)
            << " calls_still_open="
            << (sent ? 0 : options.service->num_open_calls());
  LOG(INFO) << "event=shutdown_complete";
  google::FlushLogFiles(google::GLOG_INFO);
  _exit(0);
}

}  // namespace favor
