// Whether the client of an HTTP request went away before its answer was
// written (its connection closed), so that work done only for that answer
// can stop: the session signals it, a handler listens (the JSON front
// cancels the request's service call, as a gRPC client's cancellation
// does; docs/http.md, "Clients that go away").
//
// Thread-safe: the session signals on its strand, a handler listens from
// any thread.
#ifndef FAVOR_SERVER_HTTP_CLIENT_GONE_H_
#define FAVOR_SERVER_HTTP_CLIENT_GONE_H_

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace favor::http {

class ClientGone {
 public:
  ClientGone() = default;
  ClientGone(const ClientGone&) = delete;
  ClientGone& operator=(const ClientGone&) = delete;

  // Runs `on_gone` once the client is gone: on the signalling thread, or
  // at once on this one if it already is. Replaces an earlier listener that
  // has not run.
  void Listen(absl::AnyInvocable<void()> on_gone);
  // The client went: runs the listener, if any, once. Later calls do
  // nothing.
  void Signal();
  bool gone() const;

 private:
  mutable absl::Mutex mu_;
  bool gone_ ABSL_GUARDED_BY(mu_) = false;
  absl::AnyInvocable<void()> on_gone_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_CLIENT_GONE_H_
