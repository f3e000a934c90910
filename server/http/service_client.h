// How the HTTP front reaches the Favor service: the service's own gRPC
// methods, called over a channel. In favor-server that channel is the gRPC
// server's in-process channel, so an HTTP call takes the one path a gRPC
// call takes (draining, validation, tokenisation, batching, deadlines,
// cancellation, metrics): nothing of the service is copied here.
// The methods are called generically, by name and serialized message, so a
// unary RPC added to favor.proto is reachable without an edit. The caller
// has authenticated the request: each call carries the service's
// in-process key (bearer_auth.h), never the client's credential.
//
// Calls are asynchronous: `done` runs on a gRPC thread when the answer is
// in; no thread waits on a computation.
#ifndef FAVOR_SERVER_HTTP_SERVICE_CLIENT_H_
#define FAVOR_SERVER_HTTP_SERVICE_CLIENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "server/common/access_log.h"
#include "server/http/client_gone.h"

namespace favor::http {

class ServiceClient {
 public:
  struct CallOptions {
    // Covers queue and compute, as a gRPC deadline does.
    absl::Time deadline = absl::InfiniteFuture();
    // Set: the call is cancelled when it is signalled (the HTTP client
    // went away), as a gRPC client's cancellation would; it is then
    // answered CANCELLED unless it was already done.
    std::shared_ptr<ClientGone> client_gone;
    // Sent as the call's x-request-id and traceparent metadata when set.
    std::string request_id;
    std::string traceparent;
    // Set: the call's code name and what the service says of it for the
    // access log (its usage trailers, call_log.h) are written here before
    // `done` runs.
    std::shared_ptr<AccessRecord> usage;
  };

  struct Answer {
    absl::Status status;
    std::string response;  // the serialized response message when OK
    // The service's retry hint (trailer `retry-after-ms`), if any.
    std::optional<int64_t> retry_after_millis;
  };

  // `channel` reaches a server of favor.v1.Favor and must outlive nothing:
  // the client holds it. `in_process_key` is that service's
  // (FavorService::in_process_key()); empty: none is sent.
  ServiceClient(std::shared_ptr<grpc::Channel> channel,
                std::string in_process_key);

  // Calls favor.v1.Favor's unary `method` ("Embed") with the serialized
  // `request`; `done` runs exactly once, on a gRPC thread.
  void Call(absl::string_view method, std::string request,
            const CallOptions& options, absl::AnyInvocable<void(Answer)> done);

 private:
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  const std::string in_process_key_;
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_SERVICE_CLIENT_H_
