#include "server/batching/retry_hint.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"

namespace favor::batching {

absl::Status ResourceExhaustedWithRetry(absl::string_view message,
                                        absl::Duration retry_after) {
  const int64_t micros =
      std::max<int64_t>(0, absl::ToInt64Microseconds(
                               absl::Ceil(retry_after, absl::Microseconds(1))));
  absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat(message, "; retry after ",
                   absl::FormatDuration(absl::Microseconds(micros))));
  status.SetPayload(kRetryAfterPayloadUrl, absl::Cord(absl::StrCat(micros)));
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kResourceExhausted)
    return std::nullopt;
  absl::optional<absl::Cord> payload = status.GetPayload(kRetryAfterPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  int64_t micros = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &micros) || micros < 0) {
    return std::nullopt;
  }
  return absl::Microseconds(micros);
}

}  // namespace favor::batching
