#include "server/service/output_vectors.h"

#include <algorithm>
#include <cmath>

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

}  // namespace favor::service
