#include "server/service/bearer_auth.h"

#include <fstream>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace favor::service {
namespace {

constexpr absl::string_view kBearerPrefix = "Bearer ";

// Equality whose time depends on the lengths only, not on where the strings
// first differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

class DeniedStream final
    : public grpc::ServerBidiReactor<v1::EmbedStreamRequest,
                                     v1::EmbedStreamResponse> {
 public:
  explicit DeniedStream(const absl::Status& status) {
    Finish(grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                        std::string(status.message())));
  }
  void OnDone() override { delete this; }
};

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadBearerTokens(
    const std::string& path) {
  std::ifstream file(path);
  if (!file.is_open()) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the tokens file '", path, "'"));
  }
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(file, line)) {
    const absl::string_view token = absl::StripAsciiWhitespace(line);
    if (token.empty() || absl::StartsWith(token, "#")) continue;
    tokens.emplace_back(token);
  }
  if (file.bad()) {
    return absl::NotFoundError(
        absl::StrCat("error reading the tokens file '", path, "'"));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the tokens file '", path, "' holds no token (one per line)"));
  }
  return tokens;
}

absl::Status CheckBearerToken(absl::string_view authorization,
                              const std::vector<std::string>& tokens) {
  // The scheme is case-insensitive (RFC 9110 11.1): "bearer" is Bearer too.
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing 'authorization: Bearer <token>' metadata");
  }
  if (!absl::StartsWithIgnoreCase(authorization, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "the authorization is not 'Bearer <token>'");
  }
  const absl::string_view presented =
      authorization.substr(kBearerPrefix.size());
  bool found = false;
  // Every token is compared, so the time does not tell which one matched.
  for (const std::string& token : tokens) {
    found |= ConstantTimeEquals(presented, token);
  }
  if (!found) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

std::string NewInProcessKey() {
  std::random_device random;
  std::string key;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&key, absl::Hex(random(), absl::kZeroPad8));
  }
  return key;
}

bool IsInProcessCall(const grpc::CallbackServerContext& context,
                     absl::string_view in_process_key) {
  const auto& metadata = context.client_metadata();
  const auto in_process = metadata.find(std::string(kInProcessKeyMetadata));
  return in_process != metadata.end() && !in_process_key.empty() &&
         ConstantTimeEquals(absl::string_view(in_process->second.data(),
                                              in_process->second.size()),
                            in_process_key);
}

absl::Status AuthenticateCall(const grpc::CallbackServerContext& context,
                              const std::vector<std::string>& tokens,
                              absl::string_view in_process_key) {
  if (tokens.empty()) return absl::OkStatus();
  if (IsInProcessCall(context, in_process_key)) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return CheckBearerToken("", tokens);
  return CheckBearerToken(
      absl::string_view(it->second.data(), it->second.size()), tokens);
}

grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
DeniedEmbedStream(const absl::Status& status) {
  return new DeniedStream(status);
}

}  // namespace favor::service
