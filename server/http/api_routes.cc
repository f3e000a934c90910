#include "server/http/api_routes.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace favor::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr absl::string_view kFavorPrefix = "/v1/favor/";
constexpr absl::string_view kModelsPrefix = "/v1/models/";
constexpr absl::string_view kDocsPath = "/docs";

// GET /info?model=NAME: NAME, percent-decoded; empty for the default model.
Route InfoRoute(absl::string_view query) {
  Route route{RouteKind::kInfo, bhttp::verb::get, ""};
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    if (!absl::ConsumePrefix(&pair, "model=")) continue;
    std::optional<std::string> model = PercentDecoded(pair);
    route.method = model.value_or(std::string(pair));
    route.bad_escape = !model.has_value();
  }
  return route;
}

absl::string_view PathOf(absl::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace

std::optional<std::string> PercentDecoded(absl::string_view segment) {
  std::string decoded;
  decoded.reserve(segment.size());
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      decoded += segment[i];
      continue;
    }
    if (i + 2 >= segment.size() ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(segment[i + 1])) ||
        !absl::ascii_isxdigit(static_cast<unsigned char>(segment[i + 2]))) {
      return std::nullopt;
    }
    decoded += absl::HexStringToBytes(segment.substr(i + 1, 2));
    i += 2;
  }
  return decoded;
}

bool OpenRoute(RouteKind kind) {
  return kind == RouteKind::kHealth || kind == RouteKind::kOpenApi ||
         kind == RouteKind::kDocs;
}

std::string RouteLabel(const Route& route, absl::string_view target) {
  switch (route.kind) {
    case RouteKind::kNone:
      return "(other)";
    case RouteKind::kModel:
      return "/v1/models/{model}";
    case RouteKind::kDocs:
      return std::string(kDocsPath);
    case RouteKind::kInfo:
      return "/info";
    case RouteKind::kFavor:
      return absl::StrCat(kFavorPrefix, route.method);
    case RouteKind::kEmbeddings:
    case RouteKind::kModels:
    case RouteKind::kHealth:
    case RouteKind::kOpenApi:
      break;
  }
  return std::string(PathOf(target));
}

Route RouteOf(absl::string_view target) {
  absl::string_view path = PathOf(target);
  const absl::string_view query = path.size() < target.size()
                                      ? target.substr(path.size() + 1)
                                      : absl::string_view();
  if (path == "/info") return InfoRoute(query);
  if (path == "/v1/embeddings") {
    return {RouteKind::kEmbeddings, bhttp::verb::post, ""};
  }
  if (path == "/v1/models") return {RouteKind::kModels, bhttp::verb::get, ""};
  if (absl::ConsumePrefix(&path, kModelsPrefix) && !path.empty()) {
    std::optional<std::string> model = PercentDecoded(path);
    return {RouteKind::kModel, bhttp::verb::get,
            model.value_or(std::string(path)), !model.has_value()};
  }
  if (path == "/health") return {RouteKind::kHealth, bhttp::verb::get, ""};
  if (path == "/openapi.json") {
    return {RouteKind::kOpenApi, bhttp::verb::get, ""};
  }
  if (absl::ConsumePrefix(&path, kDocsPath) &&
      (path.empty() || path[0] == '/')) {
    return {RouteKind::kDocs, bhttp::verb::get, std::string(path)};
  }
  if (absl::ConsumePrefix(&path, kFavorPrefix) && !path.empty()) {
    return {RouteKind::kFavor, bhttp::verb::post, std::string(path)};
  }
  return {};
}

}  // namespace favor::http
