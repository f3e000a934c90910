// Bearer-token authentication of the favor.v1.Favor service.
//
// BearerAuthService wraps a FavorService: every Favor RPC (Embed,
// EmbedStream, Attend, ListModels, GetModel, Tokenize) must carry the metadata
// `authorization: Bearer <token>` with one of the configured tokens, else it
// is answered UNAUTHENTICATED before the wrapped handler runs. Other
// services registered on the same server (grpc.health.v1.Health,
// reflection) are not wrapped and stay open, so that probes need no token.
// Tokens are compared in constant time and never logged or echoed.
#ifndef FAVOR_SERVER_SERVICE_BEARER_AUTH_H_
#define FAVOR_SERVER_SERVICE_BEARER_AUTH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "favor/v1/favor.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/service/favor_service.h"

namespace favor::service {

// Reads the tokens of a tokens file: one token per line, surrounding
// whitespace dropped, blank lines and lines starting with '#' ignored.
// NOT_FOUND when the file cannot be read, INVALID_ARGUMENT when it holds no
// token. Messages name the file, never a token.
absl::StatusOr<std::vector<std::string>> ReadBearerTokens(
    const std::string& path);

// OK when `authorization` is "Bearer <t>" with `t` one of `tokens`; else
// UNAUTHENTICATED (the message does not contain the presented token).
absl::Status CheckBearerToken(absl::string_view authorization,
                              const std::vector<std::string>& tokens);

class BearerAuthService final : public v1::Favor::CallbackService {
 public:
  // `inner` must outlive this service; `tokens` must not be empty.
  BearerAuthService(FavorService* inner, std::vector<std::string> tokens);

  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* context,
                                  const v1::EmbedRequest* request,
                                  v1::EmbedResponse* response) override;
  grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
  EmbedStream(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Attend(grpc::CallbackServerContext* context,
                                   const v1::AttendRequest* request,
                                   v1::AttendResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(
      grpc::CallbackServerContext* context,
      const v1::ListModelsRequest* request,
      v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::GetModelResponse* response) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;

  // Implementation details follow.
 private:
  absl::Status Authenticate(const grpc::CallbackServerContext* context) const;
  // The wrapped service's `handler` when `context` carries a valid token,
  // else a reactor already finished UNAUTHENTICATED.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* AuthenticatedUnary(
      grpc::CallbackServerContext* context, const Request* request,
      Response* response,
      grpc::ServerUnaryReactor* (FavorService::*handler)(
          grpc::CallbackServerContext*, const Request*, Response*));

  FavorService* const inner_;
  const std::vector<std::string> tokens_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_BEARER_AUTH_H_
