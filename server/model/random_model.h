// Writes a model with seeded random weights: what `favor-model init` does,
// and how tests and benchmarks make models of any shape.
//
// Determinism: every value is drawn from the attention library's Philox
// generator (server/attention/philox.h), with the stream chosen by a hash of
// the tensor's name, so a file is a pure function of (config, options) on any
// machine and any LibTorch version, and adding a tensor to the format leaves
// the others' values unchanged. The projections are not written: the loader
// draws them from the config's projection_seed, deterministically too.
//
// LibTorch-free.
#ifndef FAVOR_SERVER_MODEL_RANDOM_MODEL_H_
#define FAVOR_SERVER_MODEL_RANDOM_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/model/model_config.h"

namespace favor::model {

struct RandomModelOptions {
  // Seed of every weight.
  uint64_t seed = 0;
  // Standard deviation of matrices, embeddings, latents and biases (BERT's
  // initializer_range). Norms get weight 1 + N(0, init_std²) and bias
  // N(0, init_std²) (ScaleNorm: g = √H), so that no weight is trivially 0
  // or 1 and tests see every tensor.
  double init_std = 0.02;
  // Writes pooler.query, so that requests may ask for attention pooling
  // (the config's pooling "attention" writes it regardless).
  bool write_pooler_query = true;
};

// Creates `directory` (and its parents) and writes config.json and
// model.safetensors into it, each atomically (temporary file, then rename).
// INVALID_ARGUMENT if the config does not validate; the errno's code if a
// file cannot be written.
absl::Status WriteRandomModel(const ModelConfig& config,
                              const std::string& directory,
                              const RandomModelOptions& options = {});

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_RANDOM_MODEL_H_
