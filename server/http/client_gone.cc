#include "server/http/client_gone.h"

#include <utility>

namespace favor::http {

void ClientGone::Listen(absl::AnyInvocable<void()> on_gone) {
  {
    absl::MutexLock lock(&mu_);
    if (!gone_) {
      on_gone_ = std::move(on_gone);
      return;
    }
  }
  if (on_gone) on_gone();  // Outside the lock: it may take others.
}

void ClientGone::Signal() {
  absl::AnyInvocable<void()> on_gone;
  {
    absl::MutexLock lock(&mu_);
    if (gone_) return;
    gone_ = true;
    on_gone = std::move(on_gone_);
  }
  if (on_gone) on_gone();
}

bool ClientGone::gone() const {
  absl::MutexLock lock(&mu_);
  return gone_;
}

}  // namespace favor::http
