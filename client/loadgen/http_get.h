// An HTTP/1.0 GET, enough to scrape favor-server's /metrics: one request,
// `Connection: close`, through Boost.Beast's client side (the library the
// server's HTTP runs on; no HTTP is parsed by hand).
#ifndef FAVOR_CLIENT_LOADGEN_HTTP_GET_H_
#define FAVOR_CLIENT_LOADGEN_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace favor::bench {

struct HttpGetOptions {
  // The whole exchange (resolving, connecting, sending, reading) gives up
  // after this long.
  absl::Duration timeout = absl::Seconds(10);
  // A larger body is refused (a misdirected scrape must not eat memory).
  size_t max_body_bytes = size_t{64} << 20;
};

// The body of `GET path` from `address` ("host:port", "[v6]:port"):
// UNAVAILABLE when the server cannot be reached or reading times out,
// DATA_LOSS for a malformed answer, FAILED_PRECONDITION for a status other
// than 200, INVALID_ARGUMENT for a bad address.
absl::StatusOr<std::string> HttpGet(absl::string_view address,
                                    absl::string_view path,
                                    const HttpGetOptions& options = {});

// Splits "host:port" or "[v6]:port"; INVALID_ARGUMENT otherwise.
absl::Status SplitHostPort(absl::string_view address, std::string* host,
                           std::string* port);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_HTTP_GET_H_
