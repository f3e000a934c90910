// Runs model reload passes (model_reloader.h) on a thread of its own, so
// that favor-server's signal loop (main.cc) answers SIGTERM at once even
// while a pass loads a large or slow folder (a pass that reads a 64 GiB
// file takes 46 s, past a Kubernetes grace period).
//
// Requests made while a pass runs are merged into one pass after it (a
// retry of failed folders if any of them asked for one). Thread-safe.
#ifndef FAVOR_SERVER_APP_RELOAD_WORKER_H_
#define FAVOR_SERVER_APP_RELOAD_WORKER_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace favor {

class ReloadWorker {
 public:
  // One pass: ModelReloader::Reload(service, retry_failed).
  using Pass = absl::AnyInvocable<void(bool retry_failed)>;

  // Starts the thread.
  explicit ReloadWorker(Pass pass);
  // Stop(). favor-server never destroys its worker: it exits (_exit) when
  // drained, whatever a pass is doing.
  ~ReloadWorker();
  ReloadWorker(const ReloadWorker&) = delete;
  ReloadWorker& operator=(const ReloadWorker&) = delete;

  // Asks for a pass; returns at once.
  void Request(bool retry_failed);
  // Lets the pass running finish, runs no other, and joins the thread.
  void Stop();
  // For tests: waits until no pass is asked for or running; false after
  // `timeout`.
  bool WaitUntilIdle(absl::Duration timeout);

 private:
  void Loop();

  Pass pass_;
  absl::Mutex mu_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool retry_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Last: started once the rest exists.
};

}  // namespace favor

#endif  // FAVOR_SERVER_APP_RELOAD_WORKER_H_
