// Client::Impl: the channels and stubs of a Client, its retry timer, and
// the registry of its asynchronous calls (so that ~Client can cancel them
// and wait for their callbacks). Shared by client.cc, unary_call.h and
// embed_streamer.cc.
#ifndef FAVOR_CLIENT_SRC_CLIENT_IMPL_H_
#define FAVOR_CLIENT_SRC_CLIENT_IMPL_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "favor/call_options.h"
#include "favor/client.h"
#include "favor/client_options.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/generic/generic_stub.h"
#include "retry.h"
#include "timer.h"

namespace favor {
namespace client_internal {

// What the client's registry knows of a call in flight.
class CallBase {
 public:
  virtual ~CallBase() = default;
  // Cancels the call; it then finishes with CANCELLED (soon, not here).
  virtual void Cancel() = 0;
};

}  // namespace client_internal

class Client::Impl {
 public:
  // `options` must be valid (ValidateOptions).
  Impl(ClientOptions options, std::vector<std::string> targets);
  // Cancels the calls in flight and waits until they have finished.
  ~Impl();

  const ClientOptions& options() const { return options_; }
  const std::vector<std::string>& targets() const { return targets_; }
  client_internal::Timer& timer() { return timer_; }
  client_internal::Jitter& jitter() { return jitter_; }

  // The channel for the next attempt, round-robin over the channels.
  size_t NextChannel();
  v1::Favor::Stub& stub(size_t channel) { return *stubs_[channel]; }
  grpc::GenericStub& generic_stub(size_t channel) {
    return *generic_stubs_[channel];
  }

  // The absolute deadline of a call made now with `call`.
  absl::Time DeadlineFor(const CallOptions& call) const;
  // Puts the deadline, wait_for_ready and the bearer token on `context`.
  void PrepareContext(absl::Time deadline, bool wait_for_ready,
                      grpc::ClientContext* context) const;

  // Adds a call to the registry; false when the client is shutting down
  // (the call must then finish with CANCELLED without starting).
  bool Register(client_internal::CallBase* call);
  void Unregister(client_internal::CallBase* call);

 private:
  const ClientOptions options_;
  const std::vector<std::string> targets_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::Favor::Stub>> stubs_;
  std::vector<std::unique_ptr<grpc::GenericStub>> generic_stubs_;
  std::atomic<size_t> next_channel_{0};
  client_internal::Jitter jitter_;

  absl::Mutex mu_;
  std::set<client_internal::CallBase*> calls_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Last member: its thread stops (running pending retries, which then see
  // their cancellation) before anything else goes.
  client_internal::Timer timer_;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_SRC_CLIENT_IMPL_H_
