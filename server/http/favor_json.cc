#include "server/http/favor_json.h"

#include "absl/strings/str_cat.h"
#include "favor/v1/favor.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver_util.h"
#include "server/http/json_codec.h"

namespace favor::http {
namespace {

namespace pb = google::protobuf;

constexpr absl::string_view kTypeUrlPrefix = "type.googleapis.com";

std::string TypeUrl(const pb::Descriptor* type) {
  return absl::StrCat(kTypeUrlPrefix, "/", type->full_name());
}

}  // namespace

FavorJson::FavorJson(const CallLimits& limits)
    : body_limits_(FavorBodyLimits(limits)),
    // The file descriptor of favor.proto (reached through one of its
    // messages, which also links it in).
      service_(
          v1::EmbedRequest::descriptor()->file()->FindServiceByName("Favor")),
      resolver_(pb::util::NewTypeResolverForDescriptorPool(
          std::string(kTypeUrlPrefix), pb::DescriptorPool::generated_pool())) {}

absl::Status FavorJson::CheckMethod(absl::string_view name) const {
  const pb::MethodDescriptor* method =
      service_->FindMethodByName(std::string(name));
  if (method == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("favor.v1.Favor has no method '", name, "'"));
  }
  if (method->client_streaming() || method->server_streaming()) {
    return absl::UnimplementedError(absl::StrCat(
        name, " streams: it is served over gRPC only (docs/http.md)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FavorJson::RequestFromJson(
    absl::string_view method, absl::string_view json) const {
  const pb::MethodDescriptor* descriptor =
      service_->FindMethodByName(std::string(method));
  if (json.empty()) json = "{}";
  absl::Status body = CheckRequestBody(json, body_limits_);
  if (!body.ok()) return body;
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  std::string binary;
  const auto status = pb::util::JsonToBinaryString(
      resolver_.get(), TypeUrl(descriptor->input_type()),
      std::string(json), &binary, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body is not a valid ",
                     descriptor->input_type()->full_name(), ": ",
                     std::string(status.message())));
  }
  return binary;
}

absl::StatusOr<std::string> FavorJson::ResponseToJson(
    absl::string_view method, const std::string& binary) const {
  const pb::MethodDescriptor* descriptor =
      service_->FindMethodByName(std::string(method));
  pb::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = pb::util::BinaryToJsonString(
      resolver_.get(), TypeUrl(descriptor->output_type()), binary, &json,
      options);
  if (!status.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot print the ", method,
                     " response: ", std::string(status.message())));
  }
  return json;
}

}  // namespace favor::http
