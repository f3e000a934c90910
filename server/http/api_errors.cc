#include "server/http/api_errors.h"

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "server/http/json_codec.h"
#include "server/http/openai.pb.h"

namespace favor::http {
namespace {

constexpr absl::string_view kParamPayload = "favor.http/param";

// OpenAI's `type` for an HTTP status.
absl::string_view TypeOf(Status status) {
  const int code = static_cast<int>(status);
  if (code == 401) return "authentication_error";
  if (code == 429) return "rate_limit_error";
  if (code >= 500) return "server_error";
  return "invalid_request_error";
}

// OpenAI's `code` where it has one for the situation; empty: null.
absl::string_view CodeOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnauthenticated:
      return "invalid_api_key";
    case absl::StatusCode::kNotFound:
      return "model_not_found";
    case absl::StatusCode::kResourceExhausted:
      return "rate_limit_exceeded";
    default:
      return "";
  }
}

Response Render(Status http_status, absl::string_view message,
                absl::string_view param, absl::string_view code) {
  openai::ErrorResponse body;
  openai::Error* error = body.mutable_error();
  error->set_message(CoerceToUtf8(message));
  error->set_type(std::string(TypeOf(http_status)));
  if (param.empty()) {
    error->mutable_param()->set_null_value({});
  } else {
    error->mutable_param()->set_string_value(CoerceToUtf8(param));
  }
  if (code.empty()) {
    error->mutable_code()->set_null_value({});
  } else {
    error->mutable_code()->set_string_value(std::string(code));
  }
  Response response = MakeResponse(http_status, "application/json",
                                   PrintJson(body, /*with_defaults=*/true));
  // RFC 9110 15.5.2: a 401 says which scheme the server takes.
  if (http_status == Status::unauthorized) {
    response.set(boost::beast::http::field::www_authenticate, "Bearer");
  }
  return response;
}

}  // namespace

absl::Status WithParam(absl::Status status, absl::string_view param) {
  status.SetPayload(kParamPayload, absl::Cord(param));
  return status;
}

std::string ParamOf(const absl::Status& status) {
  const auto param = status.GetPayload(kParamPayload);
  return param.has_value() ? std::string(*param) : std::string();
}

Status HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return Status::ok;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return Status::bad_request;
    case absl::StatusCode::kUnauthenticated:
      return Status::unauthorized;
    case absl::StatusCode::kPermissionDenied:
      return Status::forbidden;
    case absl::StatusCode::kNotFound:
      return Status::not_found;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return Status::conflict;
    case absl::StatusCode::kResourceExhausted:
      return Status::too_many_requests;
    case absl::StatusCode::kCancelled:
      // nginx's "client closed request": the client is gone anyway.
      return static_cast<Status>(499);
    case absl::StatusCode::kUnimplemented:
      return Status::not_implemented;
    case absl::StatusCode::kUnavailable:
      return Status::service_unavailable;
    case absl::StatusCode::kDeadlineExceeded:
      return Status::gateway_timeout;
    default:
      return Status::internal_server_error;
  }
}

Response ErrorResponse(const absl::Status& status,
                       std::optional<int64_t> retry_after_millis) {
  if (status.code() == absl::StatusCode::kResourceExhausted &&
      !retry_after_millis.has_value()) {
    // No retry hint: the request can never run here (larger than the
    // memory budget or the message limit). 429 would have OpenAI's clients
    // retry it in vain.
    return Render(Status::payload_too_large, status.message(),
                  ParamOf(status), "");
  }
  Response response = Render(HttpStatusOf(status.code()), status.message(),
                             ParamOf(status), CodeOf(status.code()));
  if (retry_after_millis.has_value()) {
    const int64_t seconds =
        std::max<int64_t>(1, (*retry_after_millis + 999) / 1000);
    response.set(boost::beast::http::field::retry_after,
                 std::to_string(seconds));
  }
  return response;
}

Response ErrorResponse(Status http_status, absl::string_view message) {
  return Render(http_status, message, "", "");
}

}  // namespace favor::http
