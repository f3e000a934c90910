#include "server/common/request_id.h"

#include <algorithm>
#include <cstdint>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace favor {
namespace {

bool IsLowerHex(absl::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

bool AllZeros(absl::string_view text) {
  return text.find_first_not_of('0') == absl::string_view::npos;
}

}  // namespace

absl::Status CheckRequestId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request id (", kRequestIdHeader, ") takes 1 to ",
                     kMaxRequestIdBytes, " characters, not ", id.size()));
  }
  const bool visible = std::all_of(
      id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
  if (!visible) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request id (", kRequestIdHeader,
        ") takes visible ASCII characters only (no space, control or "
        "non-ASCII byte)"));
  }
  return absl::OkStatus();
}

std::string NewRequestId() {
  // Seeded once per thread from the system's entropy: ids must not repeat,
  // not be secret.
  thread_local std::mt19937_64 bits([] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }());
  return absl::StrCat(absl::Hex(bits(), absl::kZeroPad16),
                      absl::Hex(bits(), absl::kZeroPad16));
}

bool IsValidTraceparent(absl::string_view value) {
  // version "-" trace-id "-" parent-id "-" trace-flags: 2+1+32+1+16+1+2.
  constexpr size_t kVersion00Bytes = 55;
  if (value.size() < kVersion00Bytes) return false;
  const absl::string_view version = value.substr(0, 2);
  if (!IsLowerHex(version) || version == "ff") return false;
  if (version == "00" && value.size() != kVersion00Bytes) return false;
  if (value.size() > kVersion00Bytes && value[kVersion00Bytes] != '-') {
    return false;
  }
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return false;
  const absl::string_view trace_id = value.substr(3, 32);
  const absl::string_view parent_id = value.substr(36, 16);
  const absl::string_view flags = value.substr(53, 2);
  return IsLowerHex(trace_id) && IsLowerHex(parent_id) && IsLowerHex(flags) &&
         !AllZeros(trace_id) && !AllZeros(parent_id);
}

CallIds ReadCallIds(absl::Span<const absl::string_view> request_ids,
                    absl::Span<const absl::string_view> traceparents) {
  CallIds ids;
  if (request_ids.size() > 1) {
    ids.status = absl::InvalidArgumentError(absl::StrCat(
        "a request has one ", kRequestIdHeader, ", not ", request_ids.size()));
  } else if (request_ids.size() == 1) {
    ids.status = CheckRequestId(request_ids[0]);
    if (ids.status.ok()) ids.request_id = std::string(request_ids[0]);
  }
  if (ids.request_id.empty()) ids.request_id = NewRequestId();
  if (!ids.status.ok()) return ids;
  if (traceparents.size() > 1) {
    ids.status = absl::InvalidArgumentError(
        absl::StrCat("a request has one ", kTraceparentHeader, ", not ",
                     traceparents.size()));
  } else if (traceparents.size() == 1) {
    if (traceparents[0].size() > kMaxTraceparentBytes) {
      ids.status = absl::InvalidArgumentError(absl::StrCat(
          "the ", kTraceparentHeader, " takes at most ", kMaxTraceparentBytes,
          " bytes, not ", traceparents[0].size()));
    } else if (IsValidTraceparent(traceparents[0])) {
      ids.traceparent = std::string(traceparents[0]);
    }
  }
  return ids;
}

}  // namespace favor
