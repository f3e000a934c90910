// What a call's options do to the vectors the model computed, applied by
// EmbedGather when it writes the answer: Matryoshka's cut to the first
// `dimensions` values, then L2 normalisation. The model is always asked for
// raw vectors, so that a cut embedding is renormalised from the raw values,
// and so that TRUNCATION_CHUNK pools its windows before normalising.
#ifndef FAVOR_SERVER_SERVICE_OUTPUT_VECTORS_H_
#define FAVOR_SERVER_SERVICE_OUTPUT_VECTORS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace favor::service {

// The first `dimensions` values of `raw` (all of them when 0 or more than
// there are), each divided by max(‖kept‖₂, 1e-12) when `normalize`.
std::vector<float> FinishEmbedding(absl::Span<const float> raw,
                                   int64_t dimensions, bool normalize);

// Divides each row of `rows` (`dim` floats each) by max(‖row‖₂, 1e-12).
void NormalizeRows(int64_t dim, std::vector<float>* rows);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_OUTPUT_VECTORS_H_
