#include "server/service/output_vectors.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace favor::service {
namespace {

// As the model's normalisation (docs/models.md): v / max(‖v‖₂, 1e-12).
void Normalize(float* values, int64_t count) {
  double squares = 0;
  for (int64_t i = 0; i < count; ++i) squares += double{values[i]} * values[i];
  const double norm = std::max(std::sqrt(squares), 1e-12);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>(values[i] / norm);
  }
}

}  // namespace

std::vector<float> FinishEmbedding(absl::Span<const float> raw,
                                   int64_t dimensions, bool normalize) {
  const int64_t size = static_cast<int64_t>(raw.size());
  const int64_t kept = dimensions > 0 ? std::min(dimensions, size) : size;
  std::vector<float> out(raw.begin(), raw.begin() + kept);
  if (normalize) Normalize(out.data(), kept);
  return out;
}

void NormalizeRows(int64_t dim, std::vector<float>* rows) {
  if (dim <= 0) return;
  for (size_t start = 0; start + dim <= rows->size(); start += dim) {
    Normalize(rows->data() + start, dim);
  }
}

absl::StatusOr<EmbeddingTypes> ResolveEmbeddingTypes(
    const google::protobuf::RepeatedField<int>& types) {
  EmbeddingTypes resolved;
  if (types.empty()) return resolved;
  resolved.float_values = false;
  for (int i = 0; i < types.size(); ++i) {
    bool* chosen = nullptr;
    switch (types[i]) {
      case v1::EMBEDDING_TYPE_FLOAT:
        chosen = &resolved.float_values;
        break;
      case v1::EMBEDDING_TYPE_INT8:
        chosen = &resolved.int8;
        break;
      case v1::EMBEDDING_TYPE_UINT8:
        chosen = &resolved.uint8;
        break;
      case v1::EMBEDDING_TYPE_BINARY:
        chosen = &resolved.binary;
        break;
      case v1::EMBEDDING_TYPE_UBINARY:
        chosen = &resolved.ubinary;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "embedding_types[", i, "] is ", types[i],
            "; must be EMBEDDING_TYPE_FLOAT, _INT8, _UINT8, _BINARY or "
            "_UBINARY"));
    }
    if (*chosen) {
      return absl::InvalidArgumentError(absl::StrCat(
          "embedding_types[", i, "] repeats ",
          v1::EmbeddingType_Name(static_cast<v1::EmbeddingType>(types[i]))));
    }
    *chosen = true;
  }
  return resolved;
}

namespace {

// round(scale·x + offset) clipped to [low, high], halves away from zero
// (std::lround), in double so that no float rounding moves a boundary.
int64_t Scaled(float x, double scale, double offset, int64_t low,
               int64_t high) {
  const double scaled = scale * double{x} + offset;
  if (!(scaled > static_cast<double>(low))) return low;  // NaN too
  if (scaled >= static_cast<double>(high)) return high;
  return std::lround(scaled);
}

// One bit per value (x > 0), most significant bit first; `minus` is
// subtracted from each byte (128 for the signed form).
std::string SignBits(absl::Span<const float> values, int minus) {
  std::string bytes((values.size() + 7) / 8, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > 0) {
      bytes[i / 8] = static_cast<char>(static_cast<uint8_t>(bytes[i / 8]) |
                                       (0x80u >> (i % 8)));
    }
  }
  for (char& byte : bytes) {
    byte = static_cast<char>(static_cast<uint8_t>(byte) - minus);
  }
  return bytes;
}

}  // namespace

void Quantize(absl::Span<const float> values, const EmbeddingTypes& types,
              v1::QuantizedEmbedding* out) {
  if (types.int8) {
    std::string* bytes = out->mutable_int8();
    bytes->resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      (*bytes)[i] = static_cast<char>(
          static_cast<int8_t>(Scaled(values[i], 127.0, 0.0, -127, 127)));
    }
  }
  if (types.uint8) {
    std::string* bytes = out->mutable_uint8();
    bytes->resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      (*bytes)[i] = static_cast<char>(
          static_cast<uint8_t>(Scaled(values[i], 127.5, 127.5, 0, 255)));
    }
  }
  if (types.binary) *out->mutable_binary() = SignBits(values, 128);
  if (types.ubinary) *out->mutable_ubinary() = SignBits(values, 0);
}

}  // namespace favor::service
