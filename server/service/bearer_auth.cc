#include "server/service/bearer_auth.h"

#include <fstream>
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

grpc::ServerUnaryReactor* Deny(grpc::CallbackServerContext* context,
                               const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                               std::string(status.message())));
  return reactor;
}

// A stream answered UNAUTHENTICATED before any message is read.
class DeniedStream final
    : public grpc::ServerBidiReactor<v1::EmbedStreamRequest,
                                     v1::EmbedStreamResponse> {
 public:
  explicit DeniedStream(const absl::Status& status) {
    Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
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
  if (!absl::StartsWith(authorization, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "missing 'authorization: Bearer <token>' metadata");
  }
  const absl::string_view presented =
      absl::StripPrefix(authorization, kBearerPrefix);
  bool found = false;
  // Every token is compared, so the time does not tell which one matched.
  for (const std::string& token : tokens) {
    found |= ConstantTimeEquals(presented, token);
  }
  if (!found) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

BearerAuthService::BearerAuthService(FavorService* inner,
                                     std::vector<std::string> tokens)
    : inner_(inner), tokens_(std::move(tokens)) {}

absl::Status BearerAuthService::Authenticate(
    const grpc::CallbackServerContext* context) const {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return CheckBearerToken("", tokens_);
  return CheckBearerToken(
      absl::string_view(it->second.data(), it->second.size()), tokens_);
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* BearerAuthService::AuthenticatedUnary(
    grpc::CallbackServerContext* context, const Request* request,
    Response* response,
    grpc::ServerUnaryReactor* (FavorService::*handler)(
        grpc::CallbackServerContext*, const Request*, Response*)) {
  absl::Status status = Authenticate(context);
  if (!status.ok()) return Deny(context, status);
  return (inner_->*handler)(context, request, response);
}

grpc::ServerUnaryReactor* BearerAuthService::Embed(
    grpc::CallbackServerContext* context, const v1::EmbedRequest* request,
    v1::EmbedResponse* response) {
  return AuthenticatedUnary(context, request, response, &FavorService::Embed);
}

grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
BearerAuthService::EmbedStream(grpc::CallbackServerContext* context) {
  absl::Status status = Authenticate(context);
  if (!status.ok()) return new DeniedStream(status);
  return inner_->EmbedStream(context);
}

grpc::ServerUnaryReactor* BearerAuthService::Attend(
    grpc::CallbackServerContext* context, const v1::AttendRequest* request,
    v1::AttendResponse* response) {
  return AuthenticatedUnary(context, request, response, &FavorService::Attend);
}

grpc::ServerUnaryReactor* BearerAuthService::ListModels(
    grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
    v1::ListModelsResponse* response) {
  return AuthenticatedUnary(context, request, response,
                            &FavorService::ListModels);
}

grpc::ServerUnaryReactor* BearerAuthService::GetModel(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request,
    v1::GetModelResponse* response) {
  return AuthenticatedUnary(context, request, response,
                            &FavorService::GetModel);
}

grpc::ServerUnaryReactor* BearerAuthService::Tokenize(
    grpc::CallbackServerContext* context, const v1::TokenizeRequest* request,
    v1::TokenizeResponse* response) {
  return AuthenticatedUnary(context, request, response,
                            &FavorService::Tokenize);
}

}  // namespace favor::service
