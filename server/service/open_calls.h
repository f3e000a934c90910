// The calls a service has accepted and gRPC is not yet done with, and the
// switch that stops accepting more: what a graceful shutdown waits for.
//
// Every reactor Begin()s when it is created. Before StopAccepting() the call
// is accepted and counted until its End() (the reactor's OnDone, which gRPC
// calls once the call's status is sent); from StopAccepting() on Begin()
// refuses, and the caller answers UNAVAILABLE at once. So the count only
// falls after StopAccepting(), and WaitUntilNoneOpen() returns once every
// call accepted before it has been answered on the wire.
//
// A stream also registers a Stoppable (Begin(stoppable)): a stream does not
// end by itself while its client keeps it open, so StopStreams() asks each
// one to answer what it has read and finish. The registry holds the streams
// weakly: StopStreams() pins each one (a shared_ptr) while it calls it, so
// a stream that ends meanwhile is freed only once the call returns, and no
// lock is held while a stream makes its gRPC calls.
//
// Thread-safe.
#ifndef FAVOR_SERVER_SERVICE_OPEN_CALLS_H_
#define FAVOR_SERVER_SERVICE_OPEN_CALLS_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace favor::service {

class OpenCalls {
 public:
  // A call that must be told to finish at shutdown (a stream).
  class Stoppable {
   public:
    virtual ~Stoppable() = default;
    // Stop taking new work, answer what was taken, then finish. Called at
    // most once, on the shutting-down thread, with no OpenCalls lock held.
    virtual void StopForShutdown() = 0;
  };

  OpenCalls() = default;
  OpenCalls(const OpenCalls&) = delete;
  OpenCalls& operator=(const OpenCalls&) = delete;

  // True: the call is accepted and counted, and must End() once. False
  // (StopAccepting() has begun): it is not counted; answer it UNAVAILABLE.
  bool Begin();
  // The same for a stream, which is also registered for StopStreams()
  // (`stoppable` not null).
  bool Begin(const std::shared_ptr<Stoppable>& stoppable);
  // An accepted call is done: `stoppable` is the one it began with (null
  // for a unary call).
  void End(const Stoppable* stoppable = nullptr);

  // From now on Begin() refuses. Idempotent.
  void StopAccepting();
  bool accepting() const;
  // StopForShutdown() on every registered stream not yet told.
  void StopStreams();
  // Blocks until no accepted call is open; false after `timeout` with some
  // still open.
  bool WaitUntilNoneOpen(absl::Duration timeout);
  int64_t num_open() const;

 private:
  mutable absl::Mutex mu_;
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
  int64_t num_open_ ABSL_GUARDED_BY(mu_) = 0;
  // Streams not yet told to stop, by address.
  std::map<const Stoppable*, std::weak_ptr<Stoppable>> streams_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_OPEN_CALLS_H_
