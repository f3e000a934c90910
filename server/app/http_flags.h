// favor-server's HTTP flags (http_flags.cc, beside main.cc: flags live next
// to main) and the start of the HTTP API from them.
#ifndef FAVOR_SERVER_APP_HTTP_FLAGS_H_
#define FAVOR_SERVER_APP_HTTP_FLAGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/common/access_log.h"
#include "server/http/api_handler.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"

namespace favor {

// The HTTP API and the server it runs on; destroys the server first.
struct HttpApi {
  std::unique_ptr<http::ApiHandler> handler;
  std::unique_ptr<http::HttpServer> server;
  ~HttpApi() { server.reset(); }
};

// INVALID_ARGUMENT naming the first HTTP flag out of its range
// (flag_range.h), or a --http_cors_allow_origins entry that is no origin.
absl::Status CheckHttpFlagRanges();

// Starts the HTTP API on `bind_address`:--http_port in front of
// `grpc_server`'s Favor service (through its in-process channel); null when
// --http_port=0.
// `tokens` are the service's bearer tokens, `in_process_key` its
// FavorService::in_process_key(), `limits` its per-call limits
// (which bound request bodies), `tls` the gRPC certificate
// files (the same flags serve both); `info` is what GET /info says of the
// server; `serving` answers GET /health;
// `metrics` records every HTTP answer and must outlive the API, as must
// `access_log` (null: no access log), which gets a line per request.
absl::StatusOr<std::unique_ptr<HttpApi>> StartHttpApi(
    grpc::Server* grpc_server, const std::string& bind_address,
    const std::vector<std::string>& tokens, const std::string& in_process_key,
    const http::CallLimits& limits, const http::HttpServer::TlsFiles& tls,
    const http::ServerInfo& info, absl::AnyInvocable<bool() const> serving,
    metrics::Metrics* metrics, AccessLog* access_log = nullptr);

}  // namespace favor

#endif  // FAVOR_SERVER_APP_HTTP_FLAGS_H_
