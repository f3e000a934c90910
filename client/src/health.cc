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

// HealthCheckResponse.status: field 1, a varint.
constexpr uint64_t kStatusTag = (1 << 3) | 0;

// Reads the value of a field of `wire_type` whose tag was just read: a
// varint into *varint; other types are skipped. False when the bytes end
// early or the wire type is unknown.
bool ReadFieldValue(const std::string& in, uint64_t wire_type, size_t* position,
                    uint64_t* varint) {
  uint64_t length;
  switch (wire_type) {
    case 0:  // varint
      return ReadVarint(in, position, varint);
    case 1:  // 64-bit
      length = 8;
      break;
    case 2:  // length-delimited
      if (!ReadVarint(in, position, &length)) return false;
      break;
    case 5:  // 32-bit
      length = 4;
      break;
    default:
      return false;
  }
  if (length > in.size() - *position) return false;
  *position += length;
  return true;
}

// The bytes of `buffer`, its slices joined.
std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (buffer.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  return bytes;
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
  const std::string bytes = BytesOf(response);
  uint64_t status = 0;  // UNKNOWN when the field is absent
  size_t position = 0;
  while (position < bytes.size()) {
    uint64_t tag, varint = 0;
    if (!ReadVarint(bytes, &position, &tag) ||
        !ReadFieldValue(bytes, tag & 7, &position, &varint)) {
      return absl::InternalError(
          "malformed grpc.health.v1.HealthCheckResponse");
    }
    if (tag == kStatusTag) status = varint;  // other fields are skipped
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
