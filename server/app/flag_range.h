// favor-server's numeric flags checked against their ranges at start-up,
// one line naming the flag ("--threads is -1; must be in [0, 4096]"), for
// the flags main.cc and http_flags.cc define. The Options structs check
// their fields again, in their own words; this is what a user reads.
#ifndef FAVOR_SERVER_APP_FLAG_RANGE_H_
#define FAVOR_SERVER_APP_FLAG_RANGE_H_

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace favor {

struct FlagRange {
  static constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
  absl::string_view flag;  // without the dashes
  int64_t value;
  int64_t min;
  int64_t max = kNoMax;
};

// INVALID_ARGUMENT naming the first flag outside its range.
absl::Status CheckFlagRanges(absl::Span<const FlagRange> ranges);

}  // namespace favor

#endif  // FAVOR_SERVER_APP_FLAG_RANGE_H_
