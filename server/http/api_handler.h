// The HTTP API of favor-server (docs/http.md), a Handler of HttpServer:
//
//   POST /v1/embeddings     OpenAI's embeddings (openai_embeddings.h)
//   GET  /v1/models         OpenAI's model list
//   POST /v1/favor/<Method> every unary favor.v1.Favor RPC as proto3 JSON
//                           (favor_json.h)
//   GET  /health            200 while serving, 503 otherwise; no key needed
//   GET  /openapi.json      the API's OpenAPI 3.1 document
//                           (openapi_document.h); no key needed
//   GET  /docs[/<file>]     the page that shows it and sends its examples
//                           (docs_page.h); no key needed
//   GET  /info[?model=NAME] the model (default: the default model) and the
//                           server, in text-embeddings-inference's shape
//                           (server_info.h); no key needed unless
//                           Options.info_requires_key
//   OPTIONS (any route)     CORS preflight, with Options.cors_allow_origins
//                           (cors.h); no key needed
//
// Handlers only translate: JSON to the service's own gRPC calls
// (service_client.h) and the answers, or their Status codes, back
// (api_errors.h). Before a body is read, the header is checked once
// (Accept): the path and method, the bearer token (with
// Options.bearer_tokens, the same CheckBearerToken the service applies to
// gRPC calls, so an unauthenticated client cannot make the server read or
// parse a body; the service calls made here carry its in-process key), and
// `X-Request-Timeout`, `X-Request-Id` and `traceparent` (request_id.h: a
// malformed id or an oversized traceparent is a 400); what it decides
// travels with the request to its body.
//
// Deadlines: `X-Request-Timeout` (seconds, "2.5", or a duration, "500ms")
// or Options.default_timeout, from when the request is in; the service
// answers DEADLINE_EXCEEDED (504) past it, queued work not computed.
#ifndef FAVOR_SERVER_HTTP_API_HANDLER_H_
#define FAVOR_SERVER_HTTP_API_HANDLER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/common/access_log.h"
#include "server/http/api_routes.h"
#include "server/http/cors.h"
#include "server/http/docs_page.h"
#include "server/http/favor_json.h"
#include "server/http/http_server.h"
#include "server/http/server_info.h"
#include "server/http/service_client.h"
#include "server/metrics/metrics.h"

namespace favor::http {

class ApiHandler final : public Handler {
 public:
  struct Options {
    // Non-empty: every request but GET /health needs
    // "Authorization: Bearer <t>" with `t` one of these (the service's
    // tokens, FavorService::Options::bearer_tokens).
    std::vector<std::string> bearer_tokens;
    // The service's FavorService::in_process_key(), which its calls carry
    // in place of the client's credential (checked here, once).
    std::string in_process_key;
    // The deadline of a request without X-Request-Timeout.
    absl::Duration default_timeout = absl::Seconds(60);
    // Origins whose web pages may call the API (cors.h; checked by
    // CorsPolicy::Validate); empty: none (no CORS headers, OPTIONS is 405);
    // {"*"}: any.
    std::vector<std::string> cors_allow_origins;
    // The service's per-call limits: a body that holds more than a call
    // within them is refused before protobuf parses it (json_codec.h).
    CallLimits call_limits;
    // Where GET /docs's files are (docs_page.h); read once, here.
    DocsPage::Options docs_page;
    // Whether GET /info needs the bearer token too (with bearer_tokens).
    bool info_requires_key = false;
    // What GET /info says of the server.
    ServerInfo server_info;
    // Where each request's access-log line goes (access_log.h); null:
    // nowhere. Must outlive the handler.
    AccessLog* access_log = nullptr;
  };

  // `channel` reaches the Favor service (favor-server: the gRPC server's
  // in-process channel). `serving` says whether GET /health answers 200;
  // called on the server's threads. Every answer is recorded in `metrics`
  // (null: Metrics::Noop()), which must outlive the handler.
  ApiHandler(const Options& options, std::shared_ptr<grpc::Channel> channel,
             absl::AnyInvocable<bool() const> serving,
             metrics::Metrics* metrics = nullptr);

  Admission Accept(const RequestHeader& header) override;
  Response Refuse(Status status, absl::string_view message) override;
  // Each answer, refusals included, carries the request's X-Request-Id
  // (request_id.h), and is written to Options::access_log with `peer`.
  Admission AcceptFrom(const RequestHeader& header,
                       absl::string_view peer) override;
  Response RefuseFrom(Status status, absl::string_view message,
                      absl::string_view peer) override;

  // GET /docs's page, as read at construction.
  const DocsPage& docs_page() const { return docs_; }

  // Implementation details follow.
 private:
  class Admitted;  // One request its header admitted (api_handler.cc).

  // The routes; the two that compute stop when the call's client_gone is
  // signalled (the HTTP client went away).
  void Embeddings(const Request& request,
                  const ServiceClient::CallOptions& call, Responder respond);
  void Models(const ServiceClient::CallOptions& call, Responder respond);
  // GET /v1/models/{model}: one model, or 404 model_not_found.
  void OneModel(const std::string& model,
                const ServiceClient::CallOptions& call, Responder respond);
  void Health(Responder respond) const;
  // GET /info: `model` (empty: the default) by GetModel, or 404
  // model_not_found.
  void Info(const std::string& model, const ServiceClient::CallOptions& call,
            Responder respond);
  void FavorMethod(const std::string& method, const Request& request,
                   const ServiceClient::CallOptions& call, Responder respond);
  // Accept's checks of the header, unrecorded: a refusal, or nullopt with
  // the request's `timeout` set.
  std::optional<Response> Admit(const RequestHeader& header, const Route& route,
                                absl::Duration* timeout) const;
  // X-Request-Timeout, or Options::default_timeout.
  absl::StatusOr<absl::Duration> TimeoutOf(const RequestHeader& header) const;

  // `respond`, recording the answer under `route` first (metrics, the
  // X-Request-Id header and the access log, from `record`).
  Responder Recorded(std::string route, Responder respond,
                     std::shared_ptr<AccessRecord> record) const;
  // Sets `response`'s X-Request-Id and writes its access-log line.
  void Log(absl::string_view route, absl::Duration duration,
           AccessRecord record, Response& response) const;

  const Options options_;
  const CorsPolicy cors_;
  absl::AnyInvocable<bool() const> serving_;
  metrics::Metrics* const metrics_;
  ServiceClient client_;
  FavorJson favor_json_;
  const DocsPage docs_;
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_API_HANDLER_H_
