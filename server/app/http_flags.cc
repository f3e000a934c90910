#include "server/app/http_flags.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "server/app/flag_range.h"
#include "server/common/status_macros.h"
#include "server/http/cors.h"

namespace {

const favor::http::HttpServer::Options kHttp;
const favor::http::ApiHandler::Options kApi;

}  // namespace

ABSL_FLAG(int, http_port, kHttp.port,
          "port of the HTTP/JSON API (OpenAI's /v1/embeddings and "
          "/v1/models, /v1/favor/<Method>, /health, /info); 0: no HTTP API");
ABSL_FLAG(int, http_threads, kHttp.num_threads,
          "threads of the HTTP event loop (handlers never block)");
ABSL_FLAG(int, http_max_connections, kHttp.max_connections,
          "open HTTP connections; one more is closed at once");
ABSL_FLAG(int64_t, http_max_header_bytes, kHttp.max_header_bytes,
          "request line and headers of one HTTP request; over it: 431");
ABSL_FLAG(int64_t, http_max_body_bytes, kHttp.max_body_bytes,
          "body of one HTTP request; over it: 413, before the body is read "
          "when Content-Length says so");
ABSL_FLAG(int64_t, http_request_read_timeout_millis,
          absl::ToInt64Milliseconds(kHttp.max_request_read_time),
          "time an HTTP client has to send a whole request, keep-alive idle "
          "time included; then the connection is closed");
ABSL_FLAG(int64_t, http_response_write_timeout_millis,
          absl::ToInt64Milliseconds(kHttp.max_response_write_time),
          "time an HTTP client has to read an answer");
ABSL_FLAG(int64_t, http_default_timeout_millis,
          absl::ToInt64Milliseconds(kApi.default_timeout),
          "deadline (queue and compute) of an HTTP request without an "
          "X-Request-Timeout header");
ABSL_FLAG(std::vector<std::string>, http_cors_allow_origins, {},
          "origins whose web pages may call the HTTP API from a browser "
          "(CORS), comma-separated, e.g. https://app.example.com; '*': any; "
          "empty: none");
ABSL_FLAG(bool, http_info_requires_key, kApi.info_requires_key,
          "GET /info needs the bearer token (--auth_tokens_file) as the "
          "other routes do; false: it is open, like /health");

namespace favor {

absl::Status CheckHttpFlagRanges() {
  const absl::Status cors =
      http::CorsPolicy::Validate(absl::GetFlag(FLAGS_http_cors_allow_origins));
  if (!cors.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_cors_allow_origins: ", cors.message()));
  }
  return CheckFlagRanges({
      {"http_port", absl::GetFlag(FLAGS_http_port), 0, 65535},
      {"http_threads", absl::GetFlag(FLAGS_http_threads), 1, 1024},
      {"http_max_connections", absl::GetFlag(FLAGS_http_max_connections), 1},
      {"http_max_header_bytes", absl::GetFlag(FLAGS_http_max_header_bytes), 256,
       int64_t{1} << 30},
      {"http_max_body_bytes", absl::GetFlag(FLAGS_http_max_body_bytes), 0},
      {"http_request_read_timeout_millis",
       absl::GetFlag(FLAGS_http_request_read_timeout_millis), 1},
      {"http_response_write_timeout_millis",
       absl::GetFlag(FLAGS_http_response_write_timeout_millis), 1},
      {"http_default_timeout_millis",
       absl::GetFlag(FLAGS_http_default_timeout_millis), 1},
  });
}

absl::StatusOr<std::unique_ptr<HttpApi>> StartHttpApi(
    grpc::Server* grpc_server, const std::string& bind_address,
    const std::vector<std::string>& tokens, const std::string& in_process_key,
    const http::CallLimits& limits, const http::HttpServer::TlsFiles& tls,
    const http::ServerInfo& info, absl::AnyInvocable<bool() const> serving,
    metrics::Metrics* metrics, AccessLog* access_log) {
  const int port = absl::GetFlag(FLAGS_http_port);
  if (port == 0) {
    LOG(INFO) << "event=http_disabled reason=\"--http_port=0\"";
    return nullptr;
  }
  http::ApiHandler::Options api;
  api.bearer_tokens = tokens;
  api.in_process_key = in_process_key;
  api.default_timeout =
      absl::Milliseconds(absl::GetFlag(FLAGS_http_default_timeout_millis));
  api.cors_allow_origins = absl::GetFlag(FLAGS_http_cors_allow_origins);
  api.call_limits = limits;
  api.info_requires_key = absl::GetFlag(FLAGS_http_info_requires_key);
  api.server_info = info;
  api.access_log = access_log;
  grpc::ChannelArguments channel;
  channel.SetMaxReceiveMessageSize(-1);
  channel.SetMaxSendMessageSize(-1);
  auto result = std::make_unique<HttpApi>();
  result->handler = std::make_unique<http::ApiHandler>(
      api, grpc_server->InProcessChannel(channel), std::move(serving), metrics);
  http::HttpServer::Options options;
  options.bind_address = bind_address;
  options.port = port;
  options.num_threads = absl::GetFlag(FLAGS_http_threads);
  options.max_connections = absl::GetFlag(FLAGS_http_max_connections);
  options.max_header_bytes = absl::GetFlag(FLAGS_http_max_header_bytes);
  options.max_body_bytes = absl::GetFlag(FLAGS_http_max_body_bytes);
  options.max_request_read_time =
      absl::Milliseconds(absl::GetFlag(FLAGS_http_request_read_timeout_millis));
  options.max_response_write_time = absl::Milliseconds(
      absl::GetFlag(FLAGS_http_response_write_timeout_millis));
  options.tls = tls;
  ASSIGN_OR_RETURN(result->server,
                   http::HttpServer::Create(options, result->handler.get()));
  LOG(INFO) << "event=http_started address=" << options.bind_address
            << " port=" << result->server->port()
            << " tls=" << (tls.cert_file.empty() ? "off" : "on") << " cors="
            << (api.cors_allow_origins.empty()
                    ? "off"
                    : absl::StrJoin(api.cors_allow_origins, ","));
  return result;
}

}  // namespace favor
