// Model (model.cc) on small seeded random models: batch invariance for every
// block, norm, position and kernel family, output shapes, input validation,
// loading and corrupt models. Parity with an independent implementation is
// model_parity_test.cc.
#include "server/model/model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/attention/cpu_features.h"
#include "server/attention/cpu_gemm.h"
#include "server/model/safetensors.h"
#include "tests/model/model_test_util.h"

namespace favor::model {
namespace {

using ::testing::HasSubstr;

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

// Whether this machine's BLAS gives a row of a float32 product x Wᵀ + b,
// W of shape (out, in), the same bits whatever the product's number of rows
// (4 or more) and the row's place among them. OpenBLAS's AVX-512 kernels do;
// its AVX2 ones (Haswell, Zen) do not: a row's bits change with the row
// count (measured on an AMD EPYC at in = 256, out = 1024: the counts 1–12,
// 13–28, 29–44 and from 45 on each give other bits) and with its place.
bool BlasRowsAreIndependentOfTheProduct(int64_t in, int64_t out) {
  at::manual_seed(1);
  const at::Tensor w = at::randn({in, out}), b = at::randn({out});
  const at::Tensor x = at::randn({300, in});
  const at::Tensor whole = at::addmm(b, x, w);
  for (const int64_t start : {0, 4, 256}) {
    for (const int64_t rows : {4, 16, 32, 44}) {
      const int64_t count = std::min(rows, x.size(0) - start);
      if (!at::equal(at::addmm(b, x.narrow(0, start, count), w),
                     whole.narrow(0, start, count))) {
        return false;
      }
    }
  }
  return true;
}

// At the default model's widths, sequences of 1 to 3 tokens (a one-word
// text is 3) and a block's tail of 1 to 3 rows are the same bits packed and
// alone. The linear layers run on cpu::Gemm where the CPU has its register
// tiles (AVX2 or AVX-512), whose rows never depend on the product; on the
// BLAS, fewer than 4 rows are summed in another order (kMinProductRows),
// and the bits hold only for a BLAS whose rows do not depend on the product
// (BlasRowsAreIndependentOfTheProduct); with another, no padding can make
// the bits the same, and packed and alone agree to float32 rounding, summed
// over a layer's products in other orders (BatchInvarianceTest's bound).
TEST_F(ModelTest, ShortSequencesAndBlockTailsAreTheSameBitsPackedAndAlone) {
  const bool bitwise = attention::cpu::GemmIsFast() ||
                       (BlasRowsAreIndependentOfTheProduct(256, 256) &&
                        BlasRowsAreIndependentOfTheProduct(256, 1024) &&
                        BlasRowsAreIndependentOfTheProduct(1024, 256));
  if (!bitwise) {
    std::printf(
        "this BLAS gives a row other bits in products of other sizes: "
        "packed and alone are compared to 1e-5 (as BatchInvarianceTest), "
        "not bit for bit\n");
  }
  ModelConfig config = SmallConfig();
  config.vocab_size = 300;
  config.hidden_size = 256;
  config.intermediate_size = 1024;
  config.num_hidden_layers = 1;
  const auto model = Make(config, "wide", ModelOptions());
  ASSERT_NE(model, nullptr);
  EmbedOptions options;
  options.pooling = Pooling::kNone;
  options.normalize = false;
  // 1–3 tokens alone, after a 254-token filler (the tail of a 256-row
  // block, and a block of their own past it), and 257 tokens alone (a last
  // block of one row).
  for (const int64_t length : {1, 2, 3, 257}) {
    const std::vector<int32_t> seq = Tokens(length, 3, 300);
    const Embeddings alone = Alone(*model, seq, options);
    for (const int64_t filler : {int64_t{254}, int64_t{255}, int64_t{300}}) {
      std::vector<int32_t> ids = Tokens(filler, 5, 300);
      ids.insert(ids.end(), seq.begin(), seq.end());
      const Embeddings packed = EmbedOrDie(
          *model, ids, {0, filler, static_cast<int64_t>(ids.size())}, options);
      for (int64_t r = 0; r < alone.num_rows(); ++r) {
        const auto a = alone.Row(r);
        const auto p = packed.Row(packed.row_offsets[1] + r);
        if (bitwise) {
          EXPECT_TRUE(std::equal(a.begin(), a.end(), p.begin()))
              << length << " tokens after " << filler << ", row " << r
              << ": relative error " << RelativeError(p, a);
        } else {
          EXPECT_LE(RelativeError(p, a), 1e-5)
              << length << " tokens after " << filler << ", row " << r;
        }
      }
    }
  }
}

// A batch larger than cpu_sub_batch_tokens runs as sub-batches of whole
// sequences, each through every layer (a sequence longer than the limit
// alone, the others side by side on the threads when there are enough):
// the same vectors, bit for bit, as the whole batch layer by layer
// (cpu_sub_batch_tokens 0), in every dtype the CPU runs,
// with rotary positions and with RoBERTa's positions (numbered from the
// token ids, sequence by sequence).
TEST_F(ModelTest, SubBatchesAreTheSameBitsAsTheWholeBatch) {
  // Two sequences past the limit (50), which run alone on every thread,
  // and 21 sub-batches of shorter ones, which run side by side, a thread
  // each, on up to 5 threads (4 sub-batches a thread), else one after
  // another.
  std::vector<int64_t> lengths = {37, 1, 130, 5, 20, 20, 9, 64, 2};
  for (int64_t i = 0; i < 30; ++i) lengths.push_back(1 + i * 7 % 45);
  const PackedBatch batch = Pack(lengths);
  const std::vector<int32_t>& ids = batch.ids;
  const std::vector<int64_t>& offsets = batch.offsets;
  std::vector<ComputeDType> dtypes = {ComputeDType::kFloat32};
  if (attention::cpu::DetectedCpuFeatures().avx2) {
    dtypes.push_back(ComputeDType::kInt8);
  }
  if (attention::cpu::HasFastBFloat16(attention::cpu::DetectedCpuFeatures())) {
    dtypes.push_back(ComputeDType::kBFloat16);
  }
  struct Case {
    std::string name;
    void (*apply)(ModelConfig&);
  };
  const Case cases[] = {
      {"favor", [](ModelConfig&) {}},
      {"rotary",
       [](ModelConfig& c) {
         c.position_embedding_type = PositionEmbedding::kRotary;
       }},
      {"after-padding", [](ModelConfig& c) {
         c.position_ids = PositionIds::kAfterPadding;
         c.pad_token_id = 1;
         c.max_position_embeddings = c.max_sequence_length + 2;
       }}};
  for (const Case& c : cases) {
    ModelConfig config = SmallConfig();
    c.apply(config);
    for (const ComputeDType dtype : dtypes) {
      ModelOptions whole_options = SmallBlocks();
      whole_options.dtype = dtype;
      whole_options.cpu_sub_batch_tokens = 0;
      ModelOptions split_options = whole_options;
      split_options.cpu_sub_batch_tokens = 50;  // 5 sub-batches
      const std::string name = c.name + "-" + std::string(NameOf(dtype));
      const auto whole = Make(config, name + "-whole", whole_options);
      const auto split = Make(config, name + "-split", split_options);
      ASSERT_NE(whole, nullptr);
      ASSERT_NE(split, nullptr);
      EmbedOptions options;
      options.pooling = Pooling::kNone;
      options.normalize = false;
      // The sub-batches first: rows they failed to write would otherwise
      // hold the whole batch's values, freed into the allocator just before.
      const Embeddings b = EmbedOrDie(*split, ids, offsets, options);
      const Embeddings a = EmbedOrDie(*whole, ids, offsets, options);
      ASSERT_EQ(a.row_offsets, b.row_offsets) << name;
      ASSERT_EQ(a.values.size(), b.values.size()) << name;
      for (int64_t r = 0; r < a.num_rows(); ++r) {
        const auto x = a.Row(r), y = b.Row(r);
        ASSERT_TRUE(std::equal(x.begin(), x.end(), y.begin()))
            << name << ": row " << r << " differs, relative error "
            << RelativeError(y, x);
      }
    }
  }
}

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

TEST_F(ModelTest, LoadsTheTokenizerItsConfigNames) {
  ModelConfig config = SmallConfig();
  config.tokenizer.file = "vocab.txt";
  RandomModelOptions random;
  ASSERT_TRUE(WriteRandomModel(config, dir_ + "/text", random).ok());
  std::ofstream(dir_ + "/text/vocab.txt")
      << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n";
  auto model = Model::Load(dir_ + "/text");
  ASSERT_TRUE(model.ok()) << model.status();
  const auto& tokenizer = (*model)->description().tokenizer;
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->Encode("Hello")->ids, (std::vector<int32_t>{2, 5, 3}));
  // Without the file the model does not load: text would have no ids.
  std::filesystem::remove(dir_ + "/text/vocab.txt");
  auto missing = Model::Load(dir_ + "/text");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr(dir_ + "/text/vocab.txt"));
  // A model without one has none.
  const auto ids_only = Make(SmallConfig(), "ids");
  ASSERT_NE(ids_only, nullptr);
  EXPECT_EQ(ids_only->description().tokenizer, nullptr);
}

TEST_F(ModelTest, OptionsTheMachineCannotHonourAreRefused) {
  ASSERT_NE(Make(SmallConfig()), nullptr);
  ModelOptions options;
  options.dtype = ComputeDType::kFloat16;
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
  // int8 is a dtype now (int8_test.cc); a name that is none is refused.
  EXPECT_FALSE(ParseComputeDType("int4").ok());
}

}  // namespace
}  // namespace favor::model
