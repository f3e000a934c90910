// What a call's options do to the vectors the model computed, applied by
// EmbedGather when it writes the answer: Matryoshka's cut to the first
// `dimensions` values, then L2 normalisation, then the quantised forms that
// EmbedRequest.embedding_types asks for. The model is always asked for
// raw vectors, so that a cut embedding is renormalised from the raw values,
// and so that TRUNCATION_CHUNK pools its windows before normalising.
#ifndef FAVOR_SERVER_SERVICE_OUTPUT_VECTORS_H_
#define FAVOR_SERVER_SERVICE_OUTPUT_VECTORS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "favor/v1/favor.pb.h"
#include "google/protobuf/repeated_field.h"

namespace favor::service {

// The first `dimensions` values of `raw` (all of them when 0 or more than
// there are), each divided by max(‖kept‖₂, 1e-12) when `normalize`.
std::vector<float> FinishEmbedding(absl::Span<const float> raw,
                                   int64_t dimensions, bool normalize);

// Divides each row of `rows` (`dim` floats each) by max(‖row‖₂, 1e-12).
void NormalizeRows(int64_t dim, std::vector<float>* rows);

// The forms of each embedding a call answers (EmbedRequest.embedding_types;
// an empty list is the float values only).
struct EmbeddingTypes {
  bool float_values = true;
  bool int8 = false;
  bool uint8 = false;
  bool binary = false;
  bool ubinary = false;

  bool any_quantized() const { return int8 || uint8 || binary || ubinary; }
};

// `types` checked (each a known type other than UNSPECIFIED, at most once)
// and resolved; INVALID_ARGUMENT naming the first bad entry.
absl::StatusOr<EmbeddingTypes> ResolveEmbeddingTypes(
    const google::protobuf::RepeatedField<int>& types);

// The forms of `values` that `types` asks for, as favor.proto's
// EmbeddingType defines them, into `out` (the others left empty).
void Quantize(absl::Span<const float> values, const EmbeddingTypes& types,
              v1::QuantizedEmbedding* out);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_OUTPUT_VECTORS_H_
