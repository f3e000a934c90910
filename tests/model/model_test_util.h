// Helpers of the encoder tests on small seeded random models.
#ifndef FAVOR_TESTS_MODEL_MODEL_TEST_UTIL_H_
#define FAVOR_TESTS_MODEL_MODEL_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "server/attention/parallelism.h"
#include "server/model/model.h"
#include "server/model/random_model.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model {

// A small model: fast to build and run, yet with several heads, layers,
// chunks and row blocks per sequence (see kOptions).
inline ModelConfig SmallConfig() {
  ModelConfig config;
  config.vocab_size = 50;
  config.hidden_size = 32;
  config.num_attention_heads = 4;
  config.num_hidden_layers = 2;
  config.intermediate_size = 48;
  config.layer_norm_eps = 1e-5;
  config.max_position_embeddings = 512;
  config.max_sequence_length = 512;
  config.attention.num_random_features = 16;
  return config;
}

// Chunks and blocks far smaller than the test sequences, so that blocks of
// the per-token layers straddle sequence boundaries and attention splits
// sequences into several chunks.
inline ModelOptions SmallBlocks() {
  ModelOptions options;
  options.attention_chunk_tokens = 8;
  options.cpu_block_tokens = 16;
  return options;
}

inline std::vector<int32_t> Tokens(int64_t length, int seed, int vocab = 50) {
  std::vector<int32_t> ids(length);
  for (int64_t i = 0; i < length; ++i) {
    ids[i] = static_cast<int32_t>((i * 31 + seed * 17 + i * i * 7) % vocab);
  }
  return ids;
}

// Sequences of `lengths` (sequence s: Tokens(lengths[s], s)) packed into
// one batch: their ids and offsets.
struct PackedBatch {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets = {0};
};
inline PackedBatch Pack(const std::vector<int64_t>& lengths) {
  PackedBatch batch;
  for (size_t s = 0; s < lengths.size(); ++s) {
    const std::vector<int32_t> seq = Tokens(lengths[s], static_cast<int>(s));
    batch.ids.insert(batch.ids.end(), seq.begin(), seq.end());
    batch.offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  return batch;
}

// max |a − b| / max |b|.
inline double RelativeError(absl::Span<const float> a,
                            absl::Span<const float> b) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    error = std::max(error, std::abs(double{a[i]} - b[i]));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return error / std::max(scale, 1e-30);
}

class ModelTest : public TempDirTest {
 protected:
  static void SetUpTestSuite() { attention::ConfigureCpuParallelism({}); }

  // Writes `config` with seeded weights as dir_/name and loads it.
  std::unique_ptr<Model> Make(const ModelConfig& config,
                              const std::string& name = "model",
                              const ModelOptions& options = SmallBlocks()) {
    RandomModelOptions random;
    random.seed = 7;
    random.init_std = 0.3;  // sharp attention: mixing shows in the outputs
    const absl::Status written =
        WriteRandomModel(config, dir_ + "/" + name, random);
    EXPECT_TRUE(written.ok()) << written;
    auto model = Model::Load(dir_ + "/" + name, options);
    EXPECT_TRUE(model.ok()) << model.status();
    return model.ok() ? *std::move(model) : nullptr;
  }
};

inline Embeddings EmbedOrDie(const Model& model,
                             const std::vector<int32_t>& ids,
                             const std::vector<int64_t>& offsets,
                             EmbedOptions options = {}) {
  auto out = model.Embed(ids, offsets, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : Embeddings();
}

// A sequence's vectors alone, as one batch.
inline Embeddings Alone(const Model& model, const std::vector<int32_t>& ids,
                        EmbedOptions options) {
  return EmbedOrDie(model, ids, {0, static_cast<int64_t>(ids.size())}, options);
}

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_MODEL_TEST_UTIL_H_
