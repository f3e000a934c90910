#include "health.h"

#include <cstdint>
#include <string>
#include <vector>

#include "grpcpp/support/slice.h"

namespace favor::client_internal {
namespace {

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

bool ReadVarint(const std::string& in, size_t* position, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *position < in.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in[(*position)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

grpc::ByteBuffer HealthCheckRequest(absl::string_view service) {
  std::string bytes;
  if (!service.empty()) {
    bytes.push_back(0x0a);  // field 1, length-delimited
    AppendVarint(service.size(), &bytes);
    bytes.append(service.data(), service.size());
  }
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

absl::StatusOr<ServingStatus> ParseHealthCheckResponse(
    const grpc::ByteBuffer& response) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (response.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  const absl::Status malformed =
      absl::InternalError("malformed grpc.health.v1.HealthCheckResponse");
  uint64_t status = 0;  // UNKNOWN when the field is absent
  size_t position = 0;
  while (position < bytes.size()) {
    uint64_t tag, value;
    if (!ReadVarint(bytes, &position, &tag)) return malformed;
    switch (tag & 7) {
      case 0:  // varint
        if (!ReadVarint(bytes, &position, &value)) return malformed;
        if (tag >> 3 == 1) status = value;
        continue;
      case 1:  // 64-bit
        value = 8;
        break;
      case 2:  // length-delimited
        if (!ReadVarint(bytes, &position, &value)) return malformed;
        break;
      case 5:  // 32-bit
        value = 4;
        break;
      default:
        return malformed;
    }
    if (value > bytes.size() - position) return malformed;
    position += value;  // skips a field of another number
  }
  switch (status) {
    case 1:
      return ServingStatus::kServing;
    case 2:
      return ServingStatus::kNotServing;
    default:  // UNKNOWN, or SERVICE_UNKNOWN (Watch only)
      return ServingStatus::kUnknown;
  }
}

}  // namespace favor::client_internal
