// LoadEncoderWeights (encoder_weights.cc): every tensor of every kind of
// layout read into its place, and nothing the layout does not list.
#include "server/model/encoder_weights.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/attention/projection.h"
#include "server/model/model_config.h"
#include "server/model/random_model.h"
#include "server/model/safetensors.h"
#include "server/model/weight_layout.h"
#include "tests/model/model_config_test_util.h"
#include "tests/model/temp_dir_test.h"

namespace favor::model::internal {
namespace {

class EncoderWeightsTest : public TempDirTest {
 protected:
  absl::StatusOr<LoadedWeights> Load(const ModelConfig& config,
                                     int64_t* elements_in_file = nullptr) {
    auto file = SafetensorsFile::Open(dir_ + "/model.safetensors");
    if (!file.ok()) return file.status();
    const absl::Status checked = CheckTensors(**file, ExpectedWeights(config));
    if (!checked.ok()) return checked;
    if (elements_in_file != nullptr) {
      *elements_in_file = 0;
      for (const std::string& name : (*file)->TensorNames()) {
        *elements_in_file += (*file)->Get(name)->num_elements();
      }
    }
    return LoadEncoderWeights(config, {}, **file, c10::Device(at::kCPU),
                              at::kFloat);
  }
};

// Where each part went, by what the config has.
void ExpectStructure(const ModelConfig& config, const EncoderWeights& w) {
  const auto layers = static_cast<size_t>(config.num_hidden_layers);
  const bool isab = config.block == BlockType::kIsab;
  EXPECT_TRUE(w.word_embeddings.defined());
  EXPECT_EQ(w.position_embeddings.defined(),
            config.position_embedding_type == PositionEmbedding::kAbsolute);
  EXPECT_EQ(w.token_type_row.defined(), config.type_vocab_size > 0);
  EXPECT_EQ(w.latents.defined(), config.block == BlockType::kCrossAttention);
  ASSERT_EQ(w.layers.size(), layers);
  EXPECT_EQ(w.induced.size(), isab ? layers : 0u);
  EXPECT_EQ(w.inducing_points.size(), isab ? layers : 0u);
  EXPECT_EQ(w.final_norm.scale.defined() || w.final_norm.weight.defined(),
            config.norm_placement == NormPlacement::kPre);
  EXPECT_TRUE(w.pooler_query.defined());
  const bool projection =
      attention::TraitsOf(config.attention.kernel).uses_projection;
  for (const LayerWeights& layer : w.layers) {
    EXPECT_TRUE(layer.attention.query_key_value.weight_t.defined());
    EXPECT_TRUE(layer.output.bias.defined());
    EXPECT_EQ(layer.attention.projection.defined(), projection);
  }
}

TEST_F(EncoderWeightsTest, ReadsEveryTensorOfEveryKindOfModel) {
  for (const ModelConfig& config : EveryKindOfModel()) {
    SCOPED_TRACE(NameOf(config.block));
    ASSERT_TRUE(WriteRandomModel(config, dir_).ok());
    int64_t elements_in_file = 0;
    auto loaded = Load(config, &elements_in_file);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    // The random model holds only tensors the encoder uses.
    EXPECT_EQ(loaded->parameter_count, elements_in_file);
    EXPECT_EQ(loaded->num_stored_projections, 0);
    ExpectStructure(config, loaded->weights);
  }
}

// A file with every tensor the layout allows, optional ones included:
// stored projections are read, BERT's pooler is accepted and left unread.
TEST_F(EncoderWeightsTest, ReadsStoredProjectionsAndSkipsBertsPooler) {
  const ModelConfig config = TinyConfig();
  const std::vector<ExpectedTensor> expected = ExpectedWeights(config);
  int64_t used_elements = 0;
  for (const ExpectedTensor& tensor : expected) {
    int64_t count = 1;
    for (int64_t dim : tensor.shape) count *= dim;
    if (tensor.name.rfind("pooler.dense.", 0) != 0) used_elements += count;
  }
  ASSERT_TRUE(
      WriteZeroTensors(dir_ + "/model.safetensors", expected, DType::kF32)
          .ok());
  auto loaded = Load(config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->num_stored_projections, config.num_hidden_layers);
  EXPECT_EQ(loaded->parameter_count, used_elements);
}

// A NaN or an infinity in any weight refuses the model, naming the tensor:
// NaN query and key weights would answer as if they were zero, and a NaN
// embedding row as "NaN" strings.
TEST_F(EncoderWeightsTest, RefusesWeightsThatAreNotFinite) {
  const ModelConfig config = TinyConfig();
  const std::vector<ExpectedTensor> expected = ExpectedWeights(config);
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
    std::vector<std::vector<float>> storage;
    std::vector<TensorToWrite> tensors;
    storage.reserve(expected.size());
    for (const ExpectedTensor& tensor : expected) {
      int64_t count = 1;
      for (int64_t dim : tensor.shape) count *= dim;
      storage.emplace_back(static_cast<size_t>(count), 0.0f);
      if (tensor.name == "encoder.layer.0.attention.self.key.weight") {
        storage.back()[3] = bad;
      }
      tensors.push_back(
          {tensor.name, DType::kF32, tensor.shape,
           absl::MakeConstSpan(
               reinterpret_cast<const uint8_t*>(storage.back().data()),
               storage.back().size() * sizeof(float))});
    }
    ASSERT_TRUE(WriteSafetensors(dir_ + "/model.safetensors", tensors).ok());
    auto loaded = Load(config);
    ASSERT_FALSE(loaded.ok()) << bad;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(loaded.status().message()),
                ::testing::HasSubstr("'encoder.layer.0.attention.self.key."
                                     "weight' holds NaN or infinite values"));
  }
}

// Projections a model does not store are drawn from its seed as its
// config says: sublayer a with projection_seed + a, orthogonal, iid or
// simplex, exactly as DrawProjection draws them.
TEST_F(EncoderWeightsTest, DrawsUnstoredProjectionsAsTheConfigSays) {
  for (const auto& [orthogonal, simplex] :
       {std::pair{true, false}, std::pair{false, false},
        std::pair{true, true}}) {
    ModelConfig config = TinyConfig();
    config.attention.orthogonal = orthogonal;
    config.attention.simplex = simplex;
    config.attention.projection_seed = 40;
    ASSERT_TRUE(WriteRandomModel(config, dir_).ok());
    auto loaded = Load(config);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    for (size_t a = 0; a < loaded->weights.layers.size(); ++a) {
      attention::ProjectionOptions options;
      options.num_features = config.attention.num_random_features;
      options.head_dim = config.head_dim();
      options.orthogonal = orthogonal;
      options.simplex = simplex;
      options.seed = 40 + a;
      EXPECT_TRUE(at::equal(loaded->weights.layers[a].attention.projection,
                            *attention::DrawProjection(options)))
          << "sublayer " << a << " orthogonal " << orthogonal << " simplex "
          << simplex;
    }
  }
}

}  // namespace
}  // namespace favor::model::internal
