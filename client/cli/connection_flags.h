// The connection flags of favor-cli and favor-bench: --endpoint, --tls,
// --tls_roots_file, --tls_server_name, --tls_client_cert_file,
// --tls_client_key_file, --bearer_token and --bearer_token_file. They are
// defined once, in connection_flags.cc, an object library linked into both
// mains and nothing else, so that flags still live with the programs (house
// style: libraries never read flags). --deadline and --max_attempts stay in
// each main.cc: their defaults and meanings differ between one CLI call and
// a load test.
#ifndef FAVOR_CLIENT_CLI_CONNECTION_FLAGS_H_
#define FAVOR_CLIENT_CLI_CONNECTION_FLAGS_H_

#include "absl/strings/string_view.h"
#include "client/cli/connection.h"

namespace favor::cli {

// ConnectionSettings with the endpoint, TLS and bearer token fields taken
// from the flags; deadline, max_attempts and user_agent_prefix keep their
// defaults, for the caller to set.
ConnectionSettings ConnectionSettingsFromFlags();

// The path of the file that defines the flags, as FlagsUsage matches it.
absl::string_view ConnectionFlagsFile();

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_CONNECTION_FLAGS_H_
