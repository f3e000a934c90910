// POST /v1/favor/<Method>: every unary RPC of favor.v1.Favor with
// protobuf's own proto3 JSON mapping (JSON to the binary request, the binary
// response to JSON, through a TypeResolver over the generated descriptors),
// so the JSON API has no schema of its own: a JSON client uses favor.proto's
// field names (snake_case; lowerCamelCase is accepted too) and enum names.
// EmbedStream, the one streaming RPC, stays on gRPC.
#ifndef FAVOR_SERVER_HTTP_FAVOR_JSON_H_
#define FAVOR_SERVER_HTTP_FAVOR_JSON_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/util/type_resolver.h"
#include "server/http/json_codec.h"

namespace google::protobuf {
class ServiceDescriptor;
}  // namespace google::protobuf

namespace favor::http {

class FavorJson {
 public:
  // Request bodies are checked against FavorBodyLimits(limits)
  // (json_codec.h) before they are parsed.
  explicit FavorJson(const CallLimits& limits = {});

  // NOT_FOUND when favor.v1.Favor has no method `name`, UNIMPLEMENTED for a
  // streaming one.
  absl::Status CheckMethod(absl::string_view name) const;

  // The JSON request of `method` (an empty body is {}) as its serialized
  // message; INVALID_ARGUMENT names what is wrong.
  absl::StatusOr<std::string> RequestFromJson(absl::string_view method,
                                              absl::string_view json) const;

  // The serialized response of `method` as JSON.
  absl::StatusOr<std::string> ResponseToJson(absl::string_view method,
                                             const std::string& binary) const;

 private:
  const JsonBodyLimits body_limits_;
  const google::protobuf::ServiceDescriptor* service_;
  std::unique_ptr<google::protobuf::util::TypeResolver> resolver_;
};

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_FAVOR_JSON_H_
