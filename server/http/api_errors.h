// Errors of the HTTP API in OpenAI's shape,
// {"error":{"message","type","param","code"}}, with the HTTP status that
// each Status code maps to (design.md's table, mapped once more at this
// edge): INVALID_ARGUMENT, FAILED_PRECONDITION and OUT_OF_RANGE 400,
// UNAUTHENTICATED 401, NOT_FOUND 404, RESOURCE_EXHAUSTED 429 with
// Retry-After when the service gave a retry hint (a full queue) and 413
// without one (a request that can never run here), UNAVAILABLE 503,
// DEADLINE_EXCEEDED 504, INTERNAL and the rest 500.
#ifndef FAVOR_SERVER_HTTP_API_ERRORS_H_
#define FAVOR_SERVER_HTTP_API_ERRORS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/http/http_server.h"

namespace favor::http {

// `status` with the request field it is about (OpenAI's `param`).
absl::Status WithParam(absl::Status status, absl::string_view param);
// The field set by WithParam; empty when none.
std::string ParamOf(const absl::Status& status);

// The HTTP status of a Status code.
Status HttpStatusOf(absl::StatusCode code);

// `status` (not OK) as an OpenAI error response; with a retry hint, also
// `Retry-After` in whole seconds, rounded up.
Response ErrorResponse(const absl::Status& status,
                       std::optional<int64_t> retry_after_millis = {});

// An error the HTTP layer answers by itself (400 malformed, 404 no such
// path, 405, 413, 431), in the same shape.
Response ErrorResponse(Status http_status, absl::string_view message);

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_API_ERRORS_H_
