// The encoder on small seeded random models (random_model.h): batch
// invariance for every block, norm, position and kernel family, pooling,
// positions, shapes, input validation, corrupt models and the repository.
// Parity with an independent implementation is model_parity_test.cc.
#include "server/model/model.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/attention/parallelism.h"
#include "server/model/model_repository.h"
#include "server/model/random_model.h"
#include "server/model/safetensors.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

// A small model: fast to build and run, yet with several heads, layers,
// chunks and row blocks per sequence (see kOptions).
ModelConfig SmallConfig() {
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
ModelOptions SmallBlocks() {
  ModelOptions options;
  options.attention_chunk_tokens = 8;
  options.cpu_block_tokens = 16;
  return options;
}

std::vector<int32_t> Tokens(int64_t length, int seed, int vocab = 50) {
  std::vector<int32_t> ids(length);
  for (int64_t i = 0; i < length; ++i) {
    ids[i] = static_cast<int32_t>((i * 31 + seed * 17 + i * i * 7) % vocab);
  }
  return ids;
}

// max |a − b| / max |b|.
double RelativeError(absl::Span<const float> a, absl::Span<const float> b) {
  double error = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    error = std::max(error, std::abs(double{a[i]} - b[i]));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return error / std::max(scale, 1e-30);
}

class ModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { attention::ConfigureCpuParallelism({}); }

  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "model_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

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

  std::string dir_;
};

Embeddings EmbedOrDie(const Model& model, const std::vector<int32_t>& ids,
                      const std::vector<int64_t>& offsets,
                      EmbedOptions options = {}) {
  auto out = model.Embed(ids, offsets, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : Embeddings();
}

// A sequence's vectors alone, as one batch.
Embeddings Alone(const Model& model, const std::vector<int32_t>& ids,
                 EmbedOptions options) {
  return EmbedOrDie(model, ids, {0, static_cast<int64_t>(ids.size())}, options);
}

// ---- Batch invariance, for every block type and option ----

struct Variant {
  std::string name;
  void (*apply)(ModelConfig&);
};

class BatchInvarianceTest : public ModelTest,
                            public ::testing::WithParamInterface<Variant> {};

// Each sequence's vectors (pooling none) and mean embedding when packed
// with sequences of other lengths, in two orders, equal its vectors alone
// to 1e-5 relative.
TEST_P(BatchInvarianceTest, PackedEqualsAlone) {
  ModelConfig config = SmallConfig();
  GetParam().apply(config);
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  const std::vector<int64_t> lengths = {37, 1, 130, 5, 64, 2};
  for (const bool reversed : {false, true}) {
    std::vector<size_t> order(lengths.size());
    std::iota(order.begin(), order.end(), 0);
    if (reversed) std::reverse(order.begin(), order.end());
    std::vector<int32_t> ids;
    std::vector<int64_t> offsets = {0};
    for (const size_t s : order) {
      const std::vector<int32_t> seq = Tokens(lengths[s], static_cast<int>(s));
      ids.insert(ids.end(), seq.begin(), seq.end());
      offsets.push_back(static_cast<int64_t>(ids.size()));
    }
    for (const Pooling pooling : {Pooling::kNone, Pooling::kMean}) {
      EmbedOptions options;
      options.pooling = pooling;
      options.normalize = false;
      const Embeddings packed = EmbedOrDie(*model, ids, offsets, options);
      for (size_t i = 0; i < order.size(); ++i) {
        const Embeddings alone =
            Alone(*model, Tokens(lengths[order[i]], static_cast<int>(order[i])),
                  options);
        ASSERT_EQ(packed.row_offsets[i + 1] - packed.row_offsets[i],
                  alone.num_rows());
        for (int64_t r = 0; r < alone.num_rows(); ++r) {
          EXPECT_LE(RelativeError(packed.Row(packed.row_offsets[i] + r),
                                  alone.Row(r)),
                    1e-5)
              << "sequence of length " << lengths[order[i]] << ", row " << r
              << ", pooling " << NameOf(pooling);
        }
      }
    }
  }
}

const Variant kVariants[] = {
    {"FavorPostLayerNormAbsolute", [](ModelConfig&) {}},
    {"FavorPreScaleNormRotary",
     [](ModelConfig& c) {
       c.norm = NormType::kScaleNorm;
       c.norm_placement = NormPlacement::kPre;
       c.position_embedding_type = PositionEmbedding::kRotary;
     }},
    {"ExactPostNoPositions",
     [](ModelConfig& c) {
       c.attention.kernel = attention::Kernel::kSoftmaxExact;
       c.position_embedding_type = PositionEmbedding::kNone;
     }},
    {"CausalFavorRotaryGeluTanh",
     [](ModelConfig& c) {
       c.attention.causal = true;
       c.position_embedding_type = PositionEmbedding::kRotary;
       c.hidden_act = Activation::kGeluTanh;
     }},
    {"ReluKernelReluActivation",
     [](ModelConfig& c) {
       c.attention.kernel = attention::Kernel::kRelu;
       c.hidden_act = Activation::kRelu;
     }},
    {"CrossAttentionPre",
     [](ModelConfig& c) {
       c.block = BlockType::kCrossAttention;
       c.num_latents = 6;
       c.norm_placement = NormPlacement::kPre;
     }},
    {"Isab",
     [](ModelConfig& c) {
       c.block = BlockType::kIsab;
       c.num_inducing_points = 5;
     }},
    {"IsabExactScaleNorm",
     [](ModelConfig& c) {
       c.block = BlockType::kIsab;
       c.num_inducing_points = 3;
       c.attention.kernel = attention::Kernel::kSoftmaxExact;
       c.norm = NormType::kScaleNorm;
     }},
};

INSTANTIATE_TEST_SUITE_P(Variants, BatchInvarianceTest,
                         ::testing::ValuesIn(kVariants),
                         [](const auto& param_info) {
                           return param_info.param.name;
                         });

// ---- Output shapes of the blocks ----

TEST_F(ModelTest, CrossAttentionGivesNumLatentsVectorsWhateverTheLength) {
  ModelConfig config = SmallConfig();
  config.block = BlockType::kCrossAttention;
  config.num_latents = 6;
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->description().vectors_per_sequence, 6);
  std::vector<int32_t> ids = Tokens(100, 1);
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  const Embeddings out = EmbedOrDie(*model, ids, {0, 3, 100}, none);
  EXPECT_EQ(out.row_offsets, (std::vector<int64_t>{0, 6, 12}));
  EXPECT_EQ(out.dim, 32);
  EXPECT_EQ(EmbedOrDie(*model, ids, {0, 3, 100}).num_rows(), 2);
}

TEST_F(ModelTest, IsabAndEncoderGiveOneVectorPerToken) {
  for (const BlockType block : {BlockType::kEncoder, BlockType::kIsab}) {
    ModelConfig config = SmallConfig();
    config.block = block;
    config.num_inducing_points = block == BlockType::kIsab ? 4 : 0;
    const auto model = Make(config, std::string(NameOf(block)));
    ASSERT_NE(model, nullptr);
    EmbedOptions none;
    none.pooling = Pooling::kNone;
    const Embeddings out = EmbedOrDie(*model, Tokens(9, 2), {0, 2, 9}, none);
    EXPECT_EQ(out.row_offsets, (std::vector<int64_t>{0, 2, 9}));
    EXPECT_EQ(static_cast<int64_t>(out.values.size()), 9 * 32);
  }
}

// ---- Pooling ----

TEST_F(ModelTest, PoolingsFollowTheirDefinitions) {
  const auto model = Make(SmallConfig());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(20, 3);
  EmbedOptions options;
  options.normalize = false;
  options.pooling = Pooling::kNone;
  const Embeddings tokens = Alone(*model, ids, options);
  options.pooling = Pooling::kMean;
  const Embeddings mean = Alone(*model, ids, options);
  options.pooling = Pooling::kCls;
  const Embeddings cls = Alone(*model, ids, options);
  std::vector<float> want(32, 0.0f);
  for (int64_t r = 0; r < 20; ++r) {
    for (int c = 0; c < 32; ++c) want[c] += tokens.Row(r)[c] / 20;
  }
  EXPECT_LE(RelativeError(mean.Row(0), want), 1e-5);
  EXPECT_EQ(std::vector<float>(cls.Row(0).begin(), cls.Row(0).end()),
            std::vector<float>(tokens.Row(0).begin(), tokens.Row(0).end()));
}

// α = softmax(q · y / √H) over the tokens, with q read from the file.
TEST_F(ModelTest, AttentionPoolingWeighsTokensBySoftmaxOfTheQuery) {
  const auto model = Make(SmallConfig());
  ASSERT_NE(model, nullptr);
  ASSERT_TRUE(model->description().has_attention_pooling);
  auto file = SafetensorsFile::Open(dir_ + "/model/model.safetensors");
  ASSERT_TRUE(file.ok());
  const TensorView query = *(*file)->Get("pooler.query");
  std::vector<float> q(32);
  std::memcpy(q.data(), query.data, 32 * sizeof(float));
  const std::vector<int32_t> ids = Tokens(11, 4);
  EmbedOptions options;
  options.normalize = false;
  options.pooling = Pooling::kNone;
  const Embeddings tokens = Alone(*model, ids, options);
  std::vector<double> scores(11);
  for (int r = 0; r < 11; ++r) {
    for (int c = 0; c < 32; ++c) scores[r] += q[c] * tokens.Row(r)[c];
    scores[r] /= std::sqrt(32.0);
  }
  const double top = *std::max_element(scores.begin(), scores.end());
  double total = 0;
  for (double& s : scores) total += (s = std::exp(s - top));
  std::vector<float> want(32, 0.0f);
  for (int r = 0; r < 11; ++r) {
    for (int c = 0; c < 32; ++c)
      want[c] += scores[r] / total * tokens.Row(r)[c];
  }
  options.pooling = Pooling::kAttention;
  EXPECT_LE(RelativeError(Alone(*model, ids, options).Row(0), want), 1e-5);
}

TEST_F(ModelTest, NormalizeGivesUnitVectorsInTheSameDirection) {
  ModelConfig config = SmallConfig();
  config.normalize = true;  // the model's default; a request may turn it off
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(30, 5);
  const Embeddings unit = EmbedOrDie(*model, ids, {0, 10, 30});
  EmbedOptions raw;
  raw.normalize = false;
  const Embeddings plain = EmbedOrDie(*model, ids, {0, 10, 30}, raw);
  for (int64_t s = 0; s < 2; ++s) {
    double norm = 0, plain_norm = 0;
    for (int c = 0; c < 32; ++c) {
      norm += unit.Row(s)[c] * unit.Row(s)[c];
      plain_norm += plain.Row(s)[c] * plain.Row(s)[c];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
    for (int c = 0; c < 32; ++c) {
      EXPECT_NEAR(unit.Row(s)[c], plain.Row(s)[c] / std::sqrt(plain_norm),
                  1e-6);
    }
  }
}

TEST_F(ModelTest, AttentionPoolingNeedsThePoolerQuery) {
  RandomModelOptions random;
  random.write_pooler_query = false;
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/bare", random).ok());
  auto model = Model::Load(dir_ + "/bare");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE((*model)->description().has_attention_pooling);
  EmbedOptions options;
  options.pooling = Pooling::kAttention;
  auto out = (*model)->Embed(Tokens(3, 0), {0, 3}, options);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("pooler.query"));
}

// ---- Positions ----

// Without positions, non-causal attention is permutation-equivariant:
// permuting the tokens permutes the outputs.
TEST_F(ModelTest, NoPositionsMakesTheEncoderPermutationEquivariant) {
  ModelConfig config = SmallConfig();
  config.position_embedding_type = PositionEmbedding::kNone;
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> ids = Tokens(12, 6);
  std::vector<int32_t> reversed(ids.rbegin(), ids.rend());
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  const Embeddings a = Alone(*model, ids, none);
  const Embeddings b = Alone(*model, reversed, none);
  for (int r = 0; r < 12; ++r) {
    EXPECT_LE(RelativeError(b.Row(11 - r), a.Row(r)), 1e-5) << "token " << r;
  }
}

// Absolute and rotary positions make order matter; rotary rotates position
// 0 by angle 0, so a one-token sequence is as without positions (the two
// models share every weight: rotary adds no tensor).
TEST_F(ModelTest, PositionsMakeOrderMatterAndRotaryStartsAtAngleZero) {
  ModelConfig config = SmallConfig();
  std::unique_ptr<Model> models[3];
  const PositionEmbedding kinds[] = {PositionEmbedding::kAbsolute,
                                     PositionEmbedding::kRotary,
                                     PositionEmbedding::kNone};
  for (int i = 0; i < 3; ++i) {
    config.position_embedding_type = kinds[i];
    models[i] = Make(config, std::string(NameOf(kinds[i])));
    ASSERT_NE(models[i], nullptr);
  }
  const std::vector<int32_t> ids = {3, 9, 27, 4};
  const std::vector<int32_t> swapped = {9, 3, 27, 4};
  EmbedOptions none;
  none.pooling = Pooling::kNone;
  for (int i = 0; i < 2; ++i) {  // token 2 sees its neighbours in new places
    EXPECT_GT(RelativeError(Alone(*models[i], ids, none).Row(2),
                            Alone(*models[i], swapped, none).Row(2)),
              1e-3)
        << NameOf(kinds[i]);
  }
  EXPECT_LE(RelativeError(Alone(*models[1], {7}, none).Row(0),
                          Alone(*models[2], {7}, none).Row(0)),
            1e-6);
  EXPECT_GT(RelativeError(Alone(*models[1], ids, none).Row(2),
                          Alone(*models[2], ids, none).Row(2)),
            1e-3);
}

// A causal model's token i sees only tokens ≤ i: a prefix's outputs are the
// first rows of the whole sequence's. For FAVOR+ this holds with ε = 0
// only: the key stabiliser is the max over the whole sequence (as in the
// reference implementation), and ε, added after that shift, weighs
// differently when a later token raises the max.
TEST_F(ModelTest, CausalOutputsDependOnlyOnEarlierTokens) {
  for (const attention::Kernel kernel :
       {attention::Kernel::kSoftmaxExact, attention::Kernel::kFavorPositive}) {
    ModelConfig config = SmallConfig();
    config.attention.kernel = kernel;
    config.attention.causal = true;
    config.attention.feature_epsilon = 0.0;
    config.position_embedding_type = PositionEmbedding::kRotary;
    const auto model = Make(config, std::string(attention::KernelName(kernel)));
    ASSERT_NE(model, nullptr);
    const std::vector<int32_t> ids = Tokens(40, 8);
    EmbedOptions none;
    none.pooling = Pooling::kNone;
    const Embeddings whole = Alone(*model, ids, none);
    const Embeddings prefix = Alone(
        *model, std::vector<int32_t>(ids.begin(), ids.begin() + 25), none);
    for (int r = 0; r < 25; ++r) {
      EXPECT_LE(RelativeError(prefix.Row(r), whole.Row(r)), 1e-5)
          << attention::KernelName(kernel) << ", token " << r;
    }
  }
}

// ---- Norms and placement ----

TEST_F(ModelTest, EveryNormAndPlacementGivesADistinctFiniteModel) {
  std::vector<Embeddings> outputs;
  for (const NormType norm : {NormType::kLayerNorm, NormType::kScaleNorm}) {
    for (const NormPlacement placement :
         {NormPlacement::kPost, NormPlacement::kPre}) {
      ModelConfig config = SmallConfig();
      config.norm = norm;
      config.norm_placement = placement;
      const auto model =
          Make(config, absl::StrCat(NameOf(norm), "_", NameOf(placement)));
      ASSERT_NE(model, nullptr);
      outputs.push_back(EmbedOrDie(*model, Tokens(16, 9), {0, 16}));
      for (const float v : outputs.back().values) ASSERT_TRUE(std::isfinite(v));
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      EXPECT_GT(RelativeError(outputs[i].values, outputs[j].values), 1e-3)
          << i << " vs " << j;
    }
  }
}

// ---- Input validation ----

TEST_F(ModelTest, BadInputIsRefusedNamingTheFieldAndLimit) {
  ModelConfig config = SmallConfig();
  config.max_sequence_length = 10;
  config.max_position_embeddings = 10;
  const auto model = Make(config);
  ASSERT_NE(model, nullptr);
  struct Case {
    std::vector<int32_t> ids;
    std::vector<int64_t> offsets;
    std::string message;
  } cases[] = {
      {{1, 50, 2},
       {0, 3},
       "token_ids[1] is 50; must be in [0, 50) (vocab_size)"},
      {{1, -1}, {0, 2}, "token_ids[1] is -1"},
      {Tokens(11, 0),
       {0, 11},
       "sequence 0 has 11 tokens; the limit is 10 "
       "(max_sequence_length)"},
      {{1, 2}, {0, 0, 2}, "sequence 0 is empty"},
      {{1, 2}, {0}, "offsets must list at least one sequence"},
      {{1, 2}, {}, "offsets must list at least one sequence"},
      {{1, 2}, {0, 3}, "end at the token count 2"},
      {{1, 2}, {1, 2}, "start at 0"},
      {{1, 2, 3}, {0, 3, 1, 3}, "offsets[2] is 1; offsets must not decrease"},
  };
  for (const Case& c : cases) {
    auto out = model->Embed(c.ids, c.offsets);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << c.message;
    EXPECT_THAT(std::string(out.status().message()), HasSubstr(c.message));
  }
}

// ---- Loading ----

TEST_F(ModelTest, DescriptionReportsWhatWasLoaded) {
  ModelConfig config = SmallConfig();
  config.version = "v7";
  const auto model = Make(config, "described");
  ASSERT_NE(model, nullptr);
  const ModelDescription& d = model->description();
  EXPECT_EQ(d.name, "described");
  EXPECT_EQ(d.config, config);
  EXPECT_EQ(d.device, "cpu");
  EXPECT_EQ(d.dtype, ComputeDType::kFloat32);
  EXPECT_EQ(d.num_features, 16);
  EXPECT_EQ(d.num_stored_projections, 0);
  EXPECT_EQ(d.embedding_dim, 32);
  auto file = SafetensorsFile::Open(dir_ + "/described/model.safetensors");
  ASSERT_TRUE(file.ok());
  int64_t elements = 0;
  for (const std::string& name : (*file)->TensorNames()) {
    elements += (*file)->Get(name)->num_elements();
  }
  EXPECT_EQ(d.parameter_count, elements);
}

TEST_F(ModelTest, RandomModelsAreAPureFunctionOfConfigAndSeed) {
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  RandomModelOptions options;
  options.seed = 3;
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/a", options).ok());
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/b", options).ok());
  options.seed = 4;
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), dir_ + "/c", options).ok());
  EXPECT_EQ(read(dir_ + "/a/model.safetensors"),
            read(dir_ + "/b/model.safetensors"));
  EXPECT_NE(read(dir_ + "/a/model.safetensors"),
            read(dir_ + "/c/model.safetensors"));
}

TEST_F(ModelTest, CorruptOrMismatchedModelsFailWithTheLoadersMessage) {
  ASSERT_NE(Make(SmallConfig(), "good"), nullptr);
  const std::string good = dir_ + "/good";
  // Truncated weights.
  std::filesystem::create_directories(dir_ + "/truncated");
  std::filesystem::copy(good + "/config.json", dir_ + "/truncated");
  std::filesystem::copy(good + "/model.safetensors", dir_ + "/truncated");
  std::filesystem::resize_file(dir_ + "/truncated/model.safetensors", 1000);
  // Weights of another shape.
  ModelConfig wider = SmallConfig();
  wider.intermediate_size = 64;
  ASSERT_TRUE(WriteRandomModel(wider, dir_ + "/shape").ok());
  std::filesystem::copy(good + "/config.json", dir_ + "/shape",
                        std::filesystem::copy_options::overwrite_existing);
  // A typo in the config.
  std::filesystem::create_directories(dir_ + "/typo");
  std::ofstream(dir_ + "/typo/config.json") << R"({"hidden_sise": 32})";
  const std::pair<std::string, std::string> cases[] = {
      {"truncated", "model.safetensors"},
      {"shape", "intermediate.dense.weight"},
      {"typo", "unknown field 'hidden_sise'"},
      {"missing", "config.json"},
  };
  for (const auto& [name, message] : cases) {
    auto model = Model::Load(dir_ + "/" + name);
    ASSERT_FALSE(model.ok()) << name;
    EXPECT_THAT(std::string(model.status().message()), HasSubstr(message))
        << name;
  }
}

TEST_F(ModelTest, OptionsTheMachineCannotHonourAreRefused) {
  ASSERT_NE(Make(SmallConfig()), nullptr);
  ModelOptions options;
  options.dtype = ComputeDType::kBFloat16;
  EXPECT_THAT(
      std::string(Model::Load(dir_ + "/model", options).status().message()),
      HasSubstr("needs a CUDA device"));
  options = {};
  options.device = "tpu:0";
  EXPECT_EQ(Model::Load(dir_ + "/model", options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.device = "cuda:99";
  EXPECT_THAT(
      std::string(Model::Load(dir_ + "/model", options).status().message()),
      HasSubstr("is not available"));
  EXPECT_EQ(ParseComputeDType("bf16").value(), ComputeDType::kBFloat16);
  EXPECT_FALSE(ParseComputeDType("int8").ok());
}

// ---- The repository ----

TEST_F(ModelTest, RepositoryLoadsEveryModelAndReportsEachFailure) {
  const std::string repository = dir_ + "/repository";
  ASSERT_TRUE(WriteRandomModel(SmallConfig(), repository + "/b").ok());
  ModelConfig exact = SmallConfig();
  exact.attention.kernel = attention::Kernel::kSoftmaxExact;
  ASSERT_TRUE(WriteRandomModel(exact, repository + "/a").ok());
  std::filesystem::create_directories(repository + "/broken");
  std::filesystem::create_directories(repository + "/.hidden");
  std::ofstream(repository + "/README") << "not a model";
  auto loaded = ModelRepository::Load(repository);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const ModelRepository& repo = **loaded;
  EXPECT_EQ(repo.ModelNames(), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(repo.failures().size(), 1u);
  EXPECT_EQ(repo.failures()[0].name, "broken");
  EXPECT_THAT(std::string(repo.failures()[0].status.message()),
              HasSubstr("broken/config.json"));
  ASSERT_TRUE(repo.Find("a").ok());
  EXPECT_EQ((*repo.Find("a"))->config().attention.kernel,
            attention::Kernel::kSoftmaxExact);
  EXPECT_EQ(repo.Find("c").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(repo.Find("c").status().message()),
              HasSubstr("models: a, b"));
  EXPECT_THAT(std::string(repo.Find("broken").status().message()),
              HasSubstr("failed to load"));
  EXPECT_EQ(ModelRepository::Load(dir_ + "/nowhere").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace favor::model
