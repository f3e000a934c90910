#include "client/cli/connection_flags.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"

ABSL_FLAG(std::vector<std::string>, endpoint, {"localhost:50051"},
          "server(s), comma-separated gRPC targets (host:port, "
          "dns:///name:port, unix:/path); calls go round-robin");
ABSL_FLAG(bool, tls, false,
          "use TLS (implied by any --tls_* flag); roots: --tls_roots_file or "
          "gRPC's default");
ABSL_FLAG(std::string, tls_roots_file, "",
          "PEM CA certificates the server's certificate must chain to");
ABSL_FLAG(std::string, tls_server_name, "",
          "name to check the server's certificate against instead of the "
          "endpoint's host");
ABSL_FLAG(std::string, tls_client_cert_file, "",
          "PEM client certificate chain, for mutual TLS");
ABSL_FLAG(std::string, tls_client_key_file, "",
          "PEM client private key, for mutual TLS");
ABSL_FLAG(std::string, bearer_token, "",
          "send 'authorization: Bearer TOKEN' (visible in ps: prefer "
          "--bearer_token_file)");
ABSL_FLAG(std::string, bearer_token_file, "",
          "file whose first line is the bearer token");

namespace favor::cli {

ConnectionSettings ConnectionSettingsFromFlags() {
  ConnectionSettings settings;
  settings.endpoints = absl::GetFlag(FLAGS_endpoint);
  settings.tls = absl::GetFlag(FLAGS_tls);
  settings.tls_roots_file = absl::GetFlag(FLAGS_tls_roots_file);
  settings.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  settings.tls_client_cert_file = absl::GetFlag(FLAGS_tls_client_cert_file);
  settings.tls_client_key_file = absl::GetFlag(FLAGS_tls_client_key_file);
  settings.bearer_token = absl::GetFlag(FLAGS_bearer_token);
  settings.bearer_token_file = absl::GetFlag(FLAGS_bearer_token_file);
  return settings;
}

// The same __FILE__ as ABSL_FLAG recorded above.
absl::string_view ConnectionFlagsFile() { return __FILE__; }

}  // namespace favor::cli
