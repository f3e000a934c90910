#include "server/service/open_calls.h"

#include <utility>
#include <vector>

namespace favor::service {

bool OpenCalls::Begin() {
  absl::MutexLock lock(&mu_);
  if (!accepting_) return false;
  ++num_open_;
  return true;
}

bool OpenCalls::Begin(const std::shared_ptr<Stoppable>& stoppable) {
  absl::MutexLock lock(&mu_);
  if (!accepting_) return false;
  ++num_open_;
  streams_[stoppable.get()] = stoppable;
  return true;
}

void OpenCalls::End(const Stoppable* stoppable) {
  absl::MutexLock lock(&mu_);
  --num_open_;
  if (stoppable != nullptr) streams_.erase(stoppable);
}

void OpenCalls::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

bool OpenCalls::accepting() const {
  absl::MutexLock lock(&mu_);
  return accepting_;
}

void OpenCalls::StopStreams() {
  std::vector<std::shared_ptr<Stoppable>> pinned;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [address, stream] : streams_) {
      std::shared_ptr<Stoppable> alive = stream.lock();
      if (alive != nullptr) pinned.push_back(std::move(alive));
    }
    // Each stream is told once; End() no longer needs to find it.
    streams_.clear();
  }
  for (const std::shared_ptr<Stoppable>& stream : pinned) {
    stream->StopForShutdown();
  }
}

bool OpenCalls::WaitUntilNoneOpen(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto none_open = [this]() {
    mu_.AssertReaderHeld();
    return num_open_ == 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&none_open), timeout);
}

int64_t OpenCalls::num_open() const {
  absl::MutexLock lock(&mu_);
  return num_open_;
}

}  // namespace favor::service
