#include "server/app/flag_range.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace favor {

absl::Status CheckFlagRanges(absl::Span<const FlagRange> ranges) {
  for (const FlagRange& range : ranges) {
    if (range.value >= range.min && range.value <= range.max) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("--", range.flag, " is ", range.value, "; must be in [",
                     range.min, ", ",
                     range.max == FlagRange::kNoMax ? std::string("2^63 - 1")
                                                    : absl::StrCat(range.max),
                     "]"));
  }
  return absl::OkStatus();
}

}  // namespace favor
