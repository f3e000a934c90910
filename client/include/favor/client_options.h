// Options of favor::Client: where the servers are, how to reach them
// (TLS or plaintext, bearer token, keepalive, message size), the default
// deadline, and the retry policy. Every field has a default; a
// default-constructed ClientOptions with one endpoint is a working
// plaintext client.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_CLIENT_OPTIONS_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_CLIENT_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace favor {

// Retries of failed calls. A call is retried only when it failed with
// UNAVAILABLE (server not ready, draining, or unreachable) or
// RESOURCE_EXHAUSTED (queue full; but not gRPC's own "message larger than
// max", which would fail again), never with another code: in particular
// INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED and DEADLINE_EXCEEDED are
// returned at once. Every retry stays inside the call's deadline: a retry
// whose wait would end past the deadline is not made, and the call returns
// the last failure (or DEADLINE_EXCEEDED if the deadline has passed).
//
// The wait before retry n (n = 1, 2, ...) is
//   min(max_backoff, initial_backoff * backoff_multiplier^(n-1)),
// scaled by a random factor in [1 - jitter_fraction, 1 + jitter_fraction].
// When the server sends a retry hint (trailing metadata `retry-after-ms` on
// a unary call, Status.retry_after_micros in an EmbedStream answer) and
// honor_retry_hint is set, the wait is at least the hint (the hint is not
// capped by max_backoff, but still by the deadline).
struct RetryOptions {
  // Attempts in all, the first one included; 1 disables retries.
  int max_attempts = 5;
  // Wait before the first retry.
  absl::Duration initial_backoff = absl::Milliseconds(50);
  // Longest computed wait between attempts (hints may ask for more).
  absl::Duration max_backoff = absl::Seconds(5);
  // Growth of the wait from one retry to the next; at least 1.
  double backoff_multiplier = 2.0;
  // Relative spread of the random jitter, in [0, 1]: 0.2 means each wait is
  // scaled by a uniform factor in [0.8, 1.2].
  double jitter_fraction = 0.2;
  // Retry on UNAVAILABLE.
  bool retry_on_unavailable = true;
  // Retry on RESOURCE_EXHAUSTED.
  bool retry_on_resource_exhausted = true;
  // Wait at least as long as the server's retry hint, when it sends one.
  bool honor_retry_hint = true;
};

// Transport security. Disabled (the default): plaintext, as for a server on
// loopback or behind a TLS-terminating proxy. Enabled: TLS, verifying the
// server against `root_certificates_pem` (or, when empty, gRPC's default
// roots: the system's or GRPC_DEFAULT_SSL_ROOTS_FILE_PATH).
struct TlsOptions {
  // Use TLS.
  bool enabled = false;
  // PEM of the certificate authorities that the server's certificate must
  // chain to (the text of the PEM file, not its path); empty means gRPC's
  // default roots.
  std::string root_certificates_pem;
  // For mutual TLS: the client's certificate chain and private key, PEM;
  // both empty means no client certificate.
  std::string client_certificate_pem;
  std::string client_private_key_pem;
  // When non-empty, the name checked against the server's certificate
  // instead of the endpoint's host (for tests and for servers reached by
  // address; the certificate must still be valid for this name).
  std::string server_name_override;
};

// HTTP/2 keepalive pings, which notice dead connections (a vanished server,
// a silent NAT drop) on long-lived channels and long streams. Off by default:
// the server must allow pings at least as often as keepalive_time, or it
// closes the connection with "too_many_pings".
struct KeepaliveOptions {
  // Interval between pings on an idle connection; absl::InfiniteDuration()
  // (the default) turns keepalive off.
  absl::Duration keepalive_time = absl::InfiniteDuration();
  // How long to wait for a ping's acknowledgement before the connection is
  // considered dead.
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // Also ping while no call is in flight.
  bool permit_without_calls = false;
};

struct ClientOptions {
  // The servers, at least one. Each is a gRPC target: "host:port",
  // "127.0.0.1:50051", "[::1]:50051", "dns:///favor.example:50051",
  // "ipv4:10.0.0.1:50051,10.0.0.2:50051", "unix:/run/favor.sock".
  // Calls are spread round-robin over every address of every endpoint
  // (gRPC's round_robin load-balancing policy): several IP-literal
  // endpoints become one "ipv4:"/"ipv6:" target, and a "dns:///" target
  // balances over all the addresses its name resolves to. Endpoints that
  // cannot be merged into one target (several host names) get a channel
  // each, and calls go round-robin over the channels.
  std::vector<std::string> endpoints = {"localhost:50051"};
  // TLS or plaintext.
  TlsOptions tls;
  // When non-empty, every call carries the metadata
  // `authorization: Bearer <bearer_token>` (also over plaintext, so that
  // loopback tests and TLS-terminating proxies work).
  std::string bearer_token;
  // Keepalive pings.
  KeepaliveOptions keepalive;
  // Deadline of a call that sets no timeout of its own (CallOptions), from
  // the moment the call is made, retries included.
  absl::Duration default_timeout = absl::Seconds(30);
  // Largest message the client sends or accepts, in bytes. gRPC's default
  // of 4 MiB is too small for token embeddings of long inputs.
  int64_t max_message_size_bytes = 64 * 1024 * 1024;
  // Retry policy.
  RetryOptions retry;
  // Put before gRPC's own user agent string (e.g. "favor-cli/0.1.0").
  std::string user_agent_prefix;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_CLIENT_OPTIONS_H_
