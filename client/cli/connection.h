// The connection settings favor-cli and favor-bench share (endpoints, TLS,
// bearer token, deadline, retries), as their flags give them, turned into
// favor::ClientOptions. Files named here are read here, so that a missing
// one is reported before any call is made.
#ifndef FAVOR_CLIENT_CLI_CONNECTION_H_
#define FAVOR_CLIENT_CLI_CONNECTION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "favor/client.h"
#include "favor/client_options.h"

namespace favor::cli {

struct ConnectionSettings {
  // gRPC targets, at least one ("host:port", "dns:///name:port", ...).
  std::vector<std::string> endpoints = {"localhost:50051"};
  // TLS when true, or when any TLS file below is set.
  bool tls = false;
  // PEM roots the server's certificate must chain to; empty: gRPC's default.
  std::string tls_roots_file;
  // Name checked against the server's certificate instead of the host.
  std::string tls_server_name;
  // Mutual TLS: the client's certificate chain and key (both or neither).
  std::string tls_client_cert_file;
  std::string tls_client_key_file;
  // Bearer token, given directly or as the first line of a file (not both).
  std::string bearer_token;
  std::string bearer_token_file;
  // Deadline of each call, retries included.
  absl::Duration deadline = absl::Seconds(30);
  // Attempts per call (1: no retries of UNAVAILABLE / RESOURCE_EXHAUSTED).
  int max_attempts = 5;
  // Put before gRPC's user agent ("favor-cli/0.1.0").
  std::string user_agent_prefix;
};

// INVALID_ARGUMENT for contradictory or empty settings, NOT_FOUND naming a
// file that cannot be read.
absl::StatusOr<ClientOptions> ToClientOptions(
    const ConnectionSettings& settings);

// A client with ToClientOptions(settings), or why there is none.
absl::StatusOr<std::unique_ptr<Client>> NewClient(
    const ConnectionSettings& settings);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_CONNECTION_H_
