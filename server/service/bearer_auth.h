// Bearer-token authentication of the favor.v1.Favor service.
//
// With tokens configured (FavorService::Options::bearer_tokens), every Favor
// RPC must carry the metadata `authorization: Bearer <token>` with one of
// them, else FavorService answers it UNAUTHENTICATED before anything else
// runs (calls from within the process excepted: AuthenticateCall). The check
// sits in the service's one entry path, so an RPC added later is covered
// without another edit. Other services registered on the same server
// (grpc.health.v1.Health, reflection) stay open, so that probes need no token.
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

namespace favor::service {

// Reads the tokens of a tokens file: one token per line, surrounding
// whitespace dropped, blank lines and lines starting with '#' ignored.
// NOT_FOUND when the file cannot be read, INVALID_ARGUMENT when it holds no
// token. Messages name the file, never a token.
absl::StatusOr<std::vector<std::string>> ReadBearerTokens(
    const std::string& path);

// OK when `authorization` is "Bearer <t>" (the scheme in any case) with `t`
// one of `tokens`; else UNAUTHENTICATED (the message does not contain the
// presented token).
absl::Status CheckBearerToken(absl::string_view authorization,
                              const std::vector<std::string>& tokens);

// The metadata by which a call from within the process (the HTTP front's,
// over the server's in-process channel) shows the service's in-process key:
// that front has checked the request's bearer token at its own edge, before
// reading its body, so each call's token is checked once, where it arrives.
inline constexpr absl::string_view kInProcessKeyMetadata =
    "x-favor-in-process-key";

// A new in-process key: 128 random bits, in hex. It never leaves the
// process.
std::string NewInProcessKey();

// True when `context` carries kInProcessKeyMetadata equal to
// `in_process_key` (not empty): a call of the HTTP front.
bool IsInProcessCall(const grpc::CallbackServerContext& context,
                     absl::string_view in_process_key);

// OK when `tokens` is empty (no authentication), when `context` carries
// kInProcessKeyMetadata equal to `in_process_key`, or when it carries
// "authorization: Bearer <t>" with `t` one of `tokens`; else
// UNAUTHENTICATED.
absl::Status AuthenticateCall(const grpc::CallbackServerContext& context,
                              const std::vector<std::string>& tokens,
                              absl::string_view in_process_key);

// An EmbedStream reactor answered with `status` before any message is read.
grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
DeniedEmbedStream(const absl::Status& status);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_BEARER_AUTH_H_
