#include "client/cli/connection.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/cli/read_file.h"

namespace favor::cli {
namespace {

absl::StatusOr<std::string> ReadIfSet(const std::string& path) {
  if (path.empty()) return std::string();
  return ReadFile(path);
}

// The token of a token file: its first line, without surrounding space.
absl::StatusOr<std::string> ReadToken(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  const std::string token(absl::StripAsciiWhitespace(
      absl::string_view(*text).substr(0, text->find('\n'))));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bearer token file '", path, "' has no token"));
  }
  return token;
}

absl::Status FillTls(const ConnectionSettings& settings, TlsOptions* tls) {
  tls->enabled = settings.tls || !settings.tls_roots_file.empty() ||
                 !settings.tls_client_cert_file.empty() ||
                 !settings.tls_client_key_file.empty() ||
                 !settings.tls_server_name.empty();
  if (settings.tls_client_cert_file.empty() !=
      settings.tls_client_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_client_cert_file and --tls_client_key_file go together");
  }
  absl::StatusOr<std::string> roots = ReadIfSet(settings.tls_roots_file);
  if (!roots.ok()) return roots.status();
  absl::StatusOr<std::string> cert = ReadIfSet(settings.tls_client_cert_file);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadIfSet(settings.tls_client_key_file);
  if (!key.ok()) return key.status();
  tls->root_certificates_pem = *std::move(roots);
  tls->client_certificate_pem = *std::move(cert);
  tls->client_private_key_pem = *std::move(key);
  tls->server_name_override = settings.tls_server_name;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClientOptions> ToClientOptions(
    const ConnectionSettings& settings) {
  ClientOptions options;
  if (settings.endpoints.empty()) {
    return absl::InvalidArgumentError("--endpoint: no endpoint given");
  }
  options.endpoints = settings.endpoints;
  absl::Status tls = FillTls(settings, &options.tls);
  if (!tls.ok()) return tls;
  if (!settings.bearer_token.empty() && !settings.bearer_token_file.empty()) {
    return absl::InvalidArgumentError(
        "give --bearer_token or --bearer_token_file, not both");
  }
  options.bearer_token = settings.bearer_token;
  if (!settings.bearer_token_file.empty()) {
    absl::StatusOr<std::string> token = ReadToken(settings.bearer_token_file);
    if (!token.ok()) return token.status();
    options.bearer_token = *std::move(token);
  }
  if (settings.deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--deadline must be positive, not ",
                     absl::FormatDuration(settings.deadline)));
  }
  options.default_timeout = settings.deadline;
  if (settings.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_attempts must be at least 1, not ", settings.max_attempts));
  }
  options.retry.max_attempts = settings.max_attempts;
  options.user_agent_prefix = settings.user_agent_prefix;
  return options;
}

absl::StatusOr<std::unique_ptr<Client>> NewClient(
    const ConnectionSettings& settings) {
  absl::StatusOr<ClientOptions> options = ToClientOptions(settings);
  if (!options.ok()) return options.status();
  return Client::Create(*options);
}

}  // namespace favor::cli
