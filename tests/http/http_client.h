// Test support: one HTTP/1.1 exchange with a server on 127.0.0.1 through
// Boost.Beast's client side (the library the server uses, so that no test
// parses HTTP by hand), in plaintext or TLS.
#ifndef FAVOR_TESTS_HTTP_HTTP_CLIENT_H_
#define FAVOR_TESTS_HTTP_HTTP_CLIENT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace favor::http::testing {

struct FetchOptions {
  std::string method = "GET";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  // Sent with its Content-Length when not empty, unless `headers` has one.
  std::string body;
  // Connecting, sending and reading the answer, together.
  absl::Duration timeout = absl::Seconds(10);
  // Set: TLS, trusting this PEM CA file (and presenting the client
  // certificate and key when set).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

struct Fetched {
  int status = 0;
  std::string headers;  // "Name: value\r\n" lines
  std::string body;
  // The value of header `name` (case-insensitive), empty when absent.
  std::string Header(absl::string_view name) const;
};

// UNAVAILABLE when the exchange fails (refused, closed, timed out), with
// the library's message.
absl::StatusOr<Fetched> Fetch(int port, const FetchOptions& options);

// `requests` one after another on one plaintext connection (keep-alive):
// the answers, in order, or the first failure. An answer with bytes beyond
// its length (a body after HEAD) makes the next exchange fail.
absl::StatusOr<std::vector<Fetched>> FetchInOrder(
    int port, const std::vector<FetchOptions>& requests);

// A POST of `body` to `target`.
absl::StatusOr<Fetched> Post(int port, absl::string_view target,
                             std::string body);

}  // namespace favor::http::testing

#endif  // FAVOR_TESTS_HTTP_HTTP_CLIENT_H_
