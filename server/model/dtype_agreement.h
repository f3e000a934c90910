// How closely a model loaded in one dtype reproduces another's embeddings
// (bfloat16 against float32): the cosine similarity of the two
// pooled embeddings of each of many inputs, and each side's throughput.
// Used by the bfloat16 tests on a few inputs and by `favor-model compare`
// on the full 1,000.
//
// LibTorch-free: it only calls Model::Embed.
#ifndef FAVOR_SERVER_MODEL_DTYPE_AGREEMENT_H_
#define FAVOR_SERVER_MODEL_DTYPE_AGREEMENT_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/model/model.h"

namespace favor::model {

struct AgreementOptions {
  int64_t num_inputs = 1000;
  // Input lengths run from 1 to max_tokens (capped by the models'
  // max_sequence_length), spaced evenly on a log scale: as many inputs of
  // 1 to 90 tokens as of 90 to 8k, because short inputs average the least
  // rounding away in their pooling.
  int64_t max_tokens = 8192;
  // Seed of the token ids (uniform over the vocabulary).
  uint64_t seed = 0;
  // Inputs are embedded in packed batches of up to this many tokens (one
  // input alone when it is longer).
  int64_t batch_tokens = 32768;
};

struct Agreement {
  int64_t num_inputs = 0;
  int64_t num_tokens = 0;
  double mean_cosine = 0;
  double min_cosine = 0;
  int64_t min_cosine_length = 0;  // the input where the minimum is
  // Wall time of each model's Embed calls, for tokens/s.
  double reference_seconds = 0;
  double candidate_seconds = 0;
};

// Embeds the same inputs with both models (same config; each with its
// default pooling, mean pooling where that is none) and compares the
// pooled embeddings.
// INVALID_ARGUMENT if the models' vocabularies or output sizes differ;
// Embed's errors otherwise.
absl::StatusOr<Agreement> CompareEmbeddings(const Model& reference,
                                            const Model& candidate,
                                            const AgreementOptions& options);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_DTYPE_AGREEMENT_H_
