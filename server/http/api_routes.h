// The HTTP API's routes (docs/http.md): which one a request's target names,
// with the model or method it carries, and the bounded `route` label its
// metrics and access-log line use. Pure functions of the target: no I/O.
#ifndef FAVOR_SERVER_HTTP_API_ROUTES_H_
#define FAVOR_SERVER_HTTP_API_ROUTES_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "boost/beast/http/verb.hpp"

namespace favor::http {

enum class RouteKind {
  kEmbeddings,  // POST /v1/embeddings
  kModels,      // GET /v1/models
  kModel,       // GET /v1/models/{model}
  kHealth,      // GET /health
  kInfo,        // GET /info[?model=NAME]
  kFavor,       // POST /v1/favor/<Method>
  kOpenApi,     // GET /openapi.json
  kDocs,        // GET /docs and what is below it
  kNone         // no such path
};

// A request's target resolved to one route.
struct Route {
  RouteKind kind = RouteKind::kNone;
  // The one method the route takes (HEAD is a GET, http_server.h).
  boost::beast::http::verb verb = boost::beast::http::verb::get;
  // kFavor: the RPC's name; kModel, kInfo: the model's, percent-decoded
  // (kInfo: empty for the default model); kDocs: the path after /docs.
  std::string method;
  // kModel, kInfo: the name has a '%' not followed by two hex digits
  // (`method` then holds it undecoded).
  bool bad_escape = false;
};

// The route that `target` (path and query, as the request line has it)
// names; kind kNone for none.
Route RouteOf(absl::string_view target);

// Whether a route is served without a key: health checks, the OpenAPI
// document and its page.
bool OpenRoute(RouteKind kind);

// The `route` label of the HTTP metrics and the access log: one of
// metric_names.h's kHttpRoutes, or "(other)", whatever the target holds.
std::string RouteLabel(const Route& route, absl::string_view target);

// A path segment's percent-escapes decoded (RFC 3986 2.1; OpenAI's clients
// escape a model name in the path); nullopt for a malformed escape.
std::optional<std::string> PercentDecoded(absl::string_view segment);

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_API_ROUTES_H_
