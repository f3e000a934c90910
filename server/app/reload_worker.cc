#include "server/app/reload_worker.h"

#include <utility>

namespace favor {

ReloadWorker::ReloadWorker(Pass pass)
    : pass_(std::move(pass)), thread_([this] { Loop(); }) {}

ReloadWorker::~ReloadWorker() { Stop(); }

void ReloadWorker::Request(bool retry_failed) {
  absl::MutexLock lock(&mu_);
  requested_ = true;
  retry_failed_ = retry_failed_ || retry_failed;
}

void ReloadWorker::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool ReloadWorker::WaitUntilIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !requested_ && !running_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

void ReloadWorker::Loop() {
  while (true) {
    bool retry_failed = false;
    {
      absl::MutexLock lock(&mu_);
      auto due = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return requested_ || stopping_;
      };
      mu_.Await(absl::Condition(&due));
      if (stopping_) return;
      retry_failed = retry_failed_;
      requested_ = false;
      retry_failed_ = false;
      running_ = true;
    }
    pass_(retry_failed);
    absl::MutexLock lock(&mu_);
    running_ = false;
  }
}

}  // namespace favor
