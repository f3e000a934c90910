// Cross-origin requests (CORS, the Fetch standard) for the HTTP API, so
// that a web page on another origin can call /v1/embeddings from the
// browser, as text-embeddings-inference's --cors-allow-origin and vLLM's
// --allowed-origins allow.
//
// Off unless origins are listed (ApiHandler::Options.cors_allow_origins,
// --http_cors_allow_origins). With a list:
// - an answer to a request whose `Origin` is listed carries
//   Access-Control-Allow-Origin (that origin, or "*" when the list is "*")
//   and exposes Retry-After, the timing headers and X-Request-Id; every
//   answer carries `Vary: Origin` unless the list is "*";
// - a preflight (OPTIONS with Origin and Access-Control-Request-Method) of
//   a listed origin, for a route's own method, is answered 204 with the
//   allowed method, the headers asked for and a max age; an unlisted origin
//   or another method gets 403. Preflights need no key: browsers send none
//   with them.
// Without a list, OPTIONS is 405 like any other method a route lacks.
#ifndef FAVOR_SERVER_HTTP_CORS_H_
#define FAVOR_SERVER_HTTP_CORS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/http/http_server.h"

namespace favor::http {

class CorsPolicy {
 public:
  // How long a browser may cache a preflight's answer.
  static constexpr int kMaxAgeSeconds = 600;

  // `allow_origins`: empty (off), {"*"} (any origin), or origins as
  // browsers send them ("https://app.example.com", scheme and host and any
  // port; compared without regard to ASCII case).
  explicit CorsPolicy(std::vector<std::string> allow_origins);

  // INVALID_ARGUMENT for "*" beside other origins, or an entry that is not
  // scheme://host[:port] (a path, a trailing slash, spaces).
  static absl::Status Validate(const std::vector<std::string>& allow_origins);

  bool enabled() const { return !allow_origins_.empty(); }

  // An OPTIONS request with Origin and Access-Control-Request-Method.
  static bool IsPreflight(const RequestHeader& header);

  // The answer to a preflight for a route that takes `route_method`
  // ("GET", which admits HEAD too, or "POST"): 204 with the CORS headers,
  // or PERMISSION_DENIED naming the origin or method not allowed. The
  // headers asked for are allowed, whatever they are: no cookies are
  // honoured here, and the key is checked on the request itself.
  absl::StatusOr<Response> Preflight(const RequestHeader& header,
                                     absl::string_view route_method) const;

  // Adds the CORS headers of an ordinary answer to a request from `origin`
  // (its Origin header; empty when it had none).
  void Decorate(absl::string_view origin, Response& response) const;

  // Implementation details follow.
 private:
  // The Access-Control-Allow-Origin value for `origin`; empty: not allowed.
  std::string AllowedOrigin(absl::string_view origin) const;

  std::vector<std::string> allow_origins_;
  bool any_origin_ = false;
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_CORS_H_
