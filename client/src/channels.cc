#include "channels.h"

#include <arpa/inet.h>

#include <climits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace favor::client_internal {
namespace {

enum class AddressKind { kIpv4, kIpv6, kOther };

// "1.2.3.4:50051" is kIpv4, "[::1]:50051" kIpv6, anything else (host names,
// targets with a scheme, a missing port) kOther.
AddressKind KindOf(absl::string_view endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == endpoint.size()) {
    return AddressKind::kOther;
  }
  for (char c : endpoint.substr(colon + 1)) {
    if (c < '0' || c > '9') return AddressKind::kOther;
  }
  std::string host(endpoint.substr(0, colon));
  unsigned char address[16];
  if (inet_pton(AF_INET, host.c_str(), address) == 1) {
    return AddressKind::kIpv4;
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    const std::string inner = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, inner.c_str(), address) == 1) {
      return AddressKind::kIpv6;
    }
  }
  return AddressKind::kOther;
}

int64_t ToMillisClamped(absl::Duration duration) {
  const int64_t millis = absl::ToInt64Milliseconds(duration);
  return millis > INT_MAX ? INT_MAX : millis;
}

std::shared_ptr<grpc::ChannelCredentials> CredentialsFor(
    const TlsOptions& tls) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.root_certificates_pem;
  ssl.pem_cert_chain = tls.client_certificate_pem;
  ssl.pem_private_key = tls.client_private_key_pem;
  return grpc::SslCredentials(ssl);
}

grpc::ChannelArguments ArgumentsFor(const ClientOptions& options) {
  grpc::ChannelArguments args;
  // Every address the target resolves to gets calls in turn.
  args.SetServiceConfigJSON(R"({"loadBalancingConfig":[{"round_robin":{}}]})");
  const int max_message =
      static_cast<int>(options.max_message_size_bytes > INT_MAX
                           ? INT_MAX
                           : options.max_message_size_bytes);
  args.SetMaxReceiveMessageSize(max_message);
  args.SetMaxSendMessageSize(max_message);
  const KeepaliveOptions& keepalive = options.keepalive;
  if (keepalive.keepalive_time != absl::InfiniteDuration()) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
                static_cast<int>(ToMillisClamped(keepalive.keepalive_time)));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                static_cast<int>(ToMillisClamped(keepalive.keepalive_timeout)));
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                keepalive.permit_without_calls ? 1 : 0);
    // Let pings go out on a connection that carries no data frames (a long
    // stream waiting for answers).
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  if (options.tls.enabled && !options.tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(options.tls.server_name_override);
  }
  if (!options.user_agent_prefix.empty()) {
    args.SetUserAgentPrefix(options.user_agent_prefix);
  }
  return args;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> TargetsFor(
    const std::vector<std::string>& endpoints) {
  if (endpoints.empty()) {
    return absl::InvalidArgumentError("ClientOptions.endpoints is empty");
  }
  for (size_t i = 0; i < endpoints.size(); ++i) {
    if (endpoints[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ClientOptions.endpoints[", i, "] is empty"));
    }
  }
  if (endpoints.size() == 1) return endpoints;
  std::vector<std::string> ipv4, ipv6, targets;
  for (const std::string& endpoint : endpoints) {
    switch (KindOf(endpoint)) {
      case AddressKind::kIpv4:
        ipv4.push_back(endpoint);
        break;
      case AddressKind::kIpv6:
        ipv6.push_back(endpoint);
        break;
      case AddressKind::kOther:
        targets.push_back(endpoint);
        break;
    }
  }
  if (!ipv4.empty()) targets.push_back("ipv4:" + absl::StrJoin(ipv4, ","));
  if (!ipv6.empty()) targets.push_back("ipv6:" + absl::StrJoin(ipv6, ","));
  return targets;
}

namespace {

absl::Status ValidateTls(const TlsOptions& tls) {
  if (tls.client_certificate_pem.empty() !=
      tls.client_private_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "TlsOptions.client_certificate_pem and client_private_key_pem must "
        "be set together");
  }
  if (!tls.enabled && (!tls.root_certificates_pem.empty() ||
                       !tls.client_certificate_pem.empty())) {
    return absl::InvalidArgumentError(
        "TlsOptions has certificates but TlsOptions.enabled is false");
  }
  return absl::OkStatus();
}

// The default timeout, the message size and keepalive.
absl::Status ValidateChannelSettings(const ClientOptions& options) {
  if (options.default_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "ClientOptions.default_timeout must be positive");
  }
  if (options.max_message_size_bytes < 1) {
    return absl::InvalidArgumentError(
        "ClientOptions.max_message_size_bytes must be at least 1");
  }
  const KeepaliveOptions& keepalive = options.keepalive;
  if (keepalive.keepalive_time <= absl::ZeroDuration() ||
      keepalive.keepalive_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "KeepaliveOptions.keepalive_time and keepalive_timeout must be "
        "positive");
  }
  return absl::OkStatus();
}

absl::Status ValidateRetry(const RetryOptions& retry) {
  if (retry.max_attempts < 1) {
    return absl::InvalidArgumentError(
        "RetryOptions.max_attempts must be at least 1");
  }
  if (retry.initial_backoff < absl::ZeroDuration() ||
      retry.max_backoff < retry.initial_backoff) {
    return absl::InvalidArgumentError(
        "RetryOptions needs 0 <= initial_backoff <= max_backoff");
  }
  if (!(retry.backoff_multiplier >= 1.0)) {
    return absl::InvalidArgumentError(
        "RetryOptions.backoff_multiplier must be at least 1");
  }
  if (!(retry.jitter_fraction >= 0.0 && retry.jitter_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        "RetryOptions.jitter_fraction must be in [0, 1]");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOptions(const ClientOptions& options) {
  if (absl::StatusOr<std::vector<std::string>> targets =
          TargetsFor(options.endpoints);
      !targets.ok()) {
    return targets.status();
  }
  for (const absl::Status& status :
       {ValidateTls(options.tls), ValidateChannelSettings(options),
        ValidateRetry(options.retry)}) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::vector<std::shared_ptr<grpc::Channel>> MakeChannels(
    const ClientOptions& options, const std::vector<std::string>& targets) {
  const std::shared_ptr<grpc::ChannelCredentials> credentials =
      CredentialsFor(options.tls);
  const grpc::ChannelArguments args = ArgumentsFor(options);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  channels.reserve(targets.size());
  for (const std::string& target : targets) {
    channels.push_back(grpc::CreateCustomChannel(target, credentials, args));
  }
  return channels;
}

}  // namespace favor::client_internal
