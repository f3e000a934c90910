#include "server/common/memory_info.h"

#include <malloc.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/common/status_macros.h"

namespace favor {
namespace {

// cgroup v1 reports "no limit" as a page-rounded INT64_MAX.
constexpr int64_t kCgroupV1Unlimited = int64_t{1} << 60;

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream file(path);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The "<n> kB" value of line `field:` of a /proc file.
absl::StatusOr<int64_t> KilobyteField(absl::string_view text,
                                      absl::string_view field) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, field) ||
        !absl::ConsumePrefix(&line, ":")) {
      continue;
    }
    line = absl::StripAsciiWhitespace(line);
    int64_t kilobytes = 0;
    if (absl::ConsumeSuffix(&line, "kB") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kilobytes)) {
      return kilobytes * 1024;
    }
    break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no '", field, ": <n> kB' line"));
}

}  // namespace

absl::StatusOr<int64_t> ParseMemTotal(absl::string_view meminfo) {
  return KilobyteField(meminfo, "MemTotal");
}

absl::StatusOr<std::optional<int64_t>> ParseCgroupLimit(
    absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text == "max") return std::optional<int64_t>();
  int64_t bytes = 0;
  if (!absl::SimpleAtoi(text, &bytes) || bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup memory limit '", text, "' is not a number"));
  }
  if (bytes >= kCgroupV1Unlimited) return std::optional<int64_t>();
  return std::optional<int64_t>(bytes);
}

absl::StatusOr<int64_t> ParseStatusField(absl::string_view status,
                                         absl::string_view field) {
  return KilobyteField(status, field);
}

absl::StatusOr<int64_t> AvailableMemoryBytes(const MemoryInfoPaths& paths) {
  ASSIGN_OR_RETURN(const std::string meminfo, ReadText(paths.meminfo));
  ASSIGN_OR_RETURN(int64_t bytes, ParseMemTotal(meminfo));
  for (const std::string& path : {paths.cgroup_v2_max, paths.cgroup_v1_limit}) {
    absl::StatusOr<std::string> text = ReadText(path);
    if (!text.ok()) continue;
    absl::StatusOr<std::optional<int64_t>> limit = ParseCgroupLimit(*text);
    if (!limit.ok()) continue;
    if (limit->has_value()) bytes = std::min(bytes, **limit);
    break;  // the first hierarchy present decides
  }
  return bytes;
}

absl::StatusOr<int64_t> ProcessMemoryBytes(absl::string_view field,
                                           const MemoryInfoPaths& paths) {
  ASSIGN_OR_RETURN(const std::string status, ReadText(paths.status));
  return ParseStatusField(status, field);
}

void ReleaseFreedHeapMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace favor
