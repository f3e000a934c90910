#include "server/http/cors.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "boost/beast/http/field.hpp"
#include "boost/beast/http/verb.hpp"

namespace favor::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr absl::string_view kAnyOrigin = "*";
// Beyond the headers every page may read (Content-Type, Content-Length):
// the retry hint, the timing headers of /v1/embeddings and the request id.
constexpr absl::string_view kExposed =
    "Retry-After, Server-Timing, x-queue-time, x-inference-time, "
    "x-compute-tokens, X-Request-Id";

// scheme://host[:port], as the Origin header serialises it.
bool IsOrigin(absl::string_view origin) {
  if (!absl::ConsumePrefix(&origin, "https://") &&
      !absl::ConsumePrefix(&origin, "http://")) {
    return false;
  }
  return !origin.empty() &&
         std::none_of(origin.begin(), origin.end(), [](char c) {
           return c == '/' || c == '*' || c == '?' || c == '#' ||
                  !absl::ascii_isgraph(static_cast<unsigned char>(c));
         });
}

}  // namespace

CorsPolicy::CorsPolicy(std::vector<std::string> allow_origins)
    : allow_origins_(std::move(allow_origins)),
      any_origin_(allow_origins_.size() == 1 &&
                  allow_origins_[0] == kAnyOrigin) {}

absl::Status CorsPolicy::Validate(
    const std::vector<std::string>& allow_origins) {
  for (const std::string& origin : allow_origins) {
    if (origin == kAnyOrigin) {
      if (allow_origins.size() == 1) continue;
      return absl::InvalidArgumentError(
          "CORS origins: '*' allows every origin and stands alone");
    }
    if (!IsOrigin(origin)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CORS origin '", origin,
          "' is not scheme://host[:port] (e.g. https://app.example.com, no "
          "path or trailing slash)"));
    }
  }
  return absl::OkStatus();
}

bool CorsPolicy::IsPreflight(const RequestHeader& header) {
  return header.method() == bhttp::verb::options &&
         header.find(bhttp::field::origin) != header.end() &&
         header.find(bhttp::field::access_control_request_method) !=
             header.end();
}

std::string CorsPolicy::AllowedOrigin(absl::string_view origin) const {
  if (origin.empty()) return "";
  if (any_origin_) return std::string(kAnyOrigin);
  for (const std::string& allowed : allow_origins_) {
    if (absl::EqualsIgnoreCase(allowed, origin)) return std::string(origin);
  }
  return "";
}

absl::StatusOr<Response> CorsPolicy::Preflight(
    const RequestHeader& header, absl::string_view route_method) const {
  const absl::string_view origin = ViewOf(header[bhttp::field::origin]);
  const std::string allowed = AllowedOrigin(origin);
  if (allowed.empty()) {
    return absl::PermissionDeniedError(
        absl::StrCat("origin '", origin, "' may not call this API"));
  }
  const absl::string_view method =
      ViewOf(header[bhttp::field::access_control_request_method]);
  const bool get = route_method == "GET";
  if (method != route_method && !(get && method == "HEAD")) {
    return absl::PermissionDeniedError(
        absl::StrCat(ViewOf(header.target()), " takes ", route_method,
                     get ? " or HEAD" : "", ", not ", method));
  }
  Response response = MakeResponse(Status::no_content, "", "");
  response.erase(bhttp::field::content_type);
  response.set(bhttp::field::access_control_allow_origin, allowed);
  response.set(bhttp::field::access_control_allow_methods,
               get ? "GET, HEAD" : std::string(route_method));
  const auto asked = header.find(bhttp::field::access_control_request_headers);
  if (asked != header.end() && !asked->value().empty()) {
    response.set(bhttp::field::access_control_allow_headers, asked->value());
  }
  response.set(bhttp::field::access_control_max_age,
               absl::StrCat(kMaxAgeSeconds));
  if (!any_origin_) response.set(bhttp::field::vary, "Origin");
  return response;
}

void CorsPolicy::Decorate(absl::string_view origin,
                          Response& response) const {
  if (!enabled()) return;
  if (!any_origin_) response.set(bhttp::field::vary, "Origin");
  const std::string allowed = AllowedOrigin(origin);
  if (allowed.empty()) return;
  response.set(bhttp::field::access_control_allow_origin, allowed);
  response.set(bhttp::field::access_control_expose_headers,
               boost::beast::string_view(kExposed.data(), kExposed.size()));
}

}  // namespace favor::http
