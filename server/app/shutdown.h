// favor-server's shutdown on SIGTERM / SIGINT (main.cc wires it; the
// contract is in docs/server.md, Shutdown): every call accepted before the
// signal is served, every other one is answered UNAVAILABLE, never
// CANCELLED.
#ifndef FAVOR_SERVER_APP_SHUTDOWN_H_
#define FAVOR_SERVER_APP_SHUTDOWN_H_

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/http/http_server.h"
#include "server/service/favor_service.h"

namespace favor {

// Installs handlers that turn SIGTERM, SIGINT and SIGHUP (reload the model
// repository) into a byte on a pipe, so that the signal is seen whichever
// thread it lands on (libraries start threads before main()), and acted on
// by the thread that reads the pipe, never inside the handler.
absl::Status InstallShutdownSignalHandlers();

// Blocks until SIGTERM or SIGINT; returns its number. SIGHUPs are skipped.
int WaitForShutdownSignal();

// Blocks until SIGTERM, SIGINT or SIGHUP, or for at most `timeout`
// (absl::InfiniteDuration(): none); returns the signal's number, 0 on
// timeout.
int WaitForSignal(absl::Duration timeout);

struct DrainOptions {
  // Health NOT_SERVING (gRPC health and HTTP GET /health).
  absl::AnyInvocable<void()> set_not_serving;
  // Not null.
  service::FavorService* service = nullptr;
  // Null: no HTTP API.
  http::HttpServer* http = nullptr;
  // How long queued work may still run (--drain_timeout_seconds).
  absl::Duration drain_timeout = absl::Seconds(30);
};

// Drains and ends the process with exit status 0:
//   1. health NOT_SERVING; every new call, stream and stream message is
//      answered UNAVAILABLE from now on;
//   2. the batchers run what is queued, for at most drain_timeout, and
//      answer the rest UNAVAILABLE; open streams answer what they have read
//      and finish UNAVAILABLE; a batch still computing at the deadline is
//      not waited for (its calls see the connection close at the end);
//   3. waits until the status of every call accepted before step 1 is sent,
//      then until the HTTP API has answered the requests it holds;
//   4. exits without grpc::Server::Shutdown(). gRPC's own shutdown cancels
//      (CANCELLED, which clients do not retry) every call whose headers
//      reach the server after it begins or that is not yet matched to a
//      reactor (grpc/grpc#41785), and clients keep sending calls until its
//      GOAWAY reaches them. Without it, such calls are answered UNAVAILABLE
//      by the service until the process ends, and any call still on the
//      wire then sees its connection close, which every gRPC client reports
//      as UNAVAILABLE. Nothing is destroyed either: gRPC's threads run
//      handlers, which use the service and the models, until the end.
[[noreturn]] void DrainAndExit(DrainOptions options);

}  // namespace favor

#endif  // FAVOR_SERVER_APP_SHUTDOWN_H_
