// Every block type (encoder, cross-attention with latent outputs, ISAB)
// crossed with every output option (pooled, spans, token embeddings,
// dimensions, truncation, embedding types, late chunking), through the real
// FavorService over gRPC (Embed and EmbedStream), over HTTP's
// /v1/favor/Embed (the same table) and over /v1/embeddings (a table of its
// own). Each combination is either
// answered as a direct Model::Embed of the same tokens says (the pooled
// vector also recomputed from the token vectors), or refused with
// INVALID_ARGUMENT (HTTP 400) by design, naming why: a model whose outputs
// are latents has no token to pool a span from, and a span read from its
// latent rows would run past them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "favor/v1/favor.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/api_handler.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"
#include "server/model/model.h"
#include "server/model/model_config.h"
#include "server/model/random_model.h"
#include "server/service/favor_service.h"
#include "tests/http/api_fixture.h"
#include "tests/http/http_client.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::http {
namespace {

using model::BlockType;

constexpr int64_t kMaxTokens = 16;  // max_sequence_length
constexpr int64_t kHidden = 32;
constexpr int64_t kLatents = 4;  // cross-attention's outputs per sequence

std::string BlockName(BlockType block) {
  switch (block) {
    case BlockType::kEncoder:
      return "Encoder";
    case BlockType::kCrossAttention:
      return "CrossAttention";
    case BlockType::kIsab:
      return "Isab";
  }
  return "?";
}

// A random model of `block` with the twelve-word vocab.txt of
// tests/service/test_server.h, so that it takes text too.
std::unique_ptr<model::Model> LoadBlockModel(BlockType block) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "favor_blocks" /
      BlockName(block);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "vocab.txt")
      << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n##s\n.\n";
  model::ModelConfig config;
  config.version = "blocks-test";
  config.vocab_size = 64;
  config.hidden_size = kHidden;
  config.num_attention_heads = 4;
  config.num_hidden_layers = 2;
  config.intermediate_size = 48;
  config.max_position_embeddings = kMaxTokens;
  config.max_sequence_length = kMaxTokens;
  config.attention.num_random_features = 16;
  config.block = block;
  if (block == BlockType::kCrossAttention) config.num_latents = kLatents;
  if (block == BlockType::kIsab) config.num_inducing_points = 4;
  config.tokenizer.file = "vocab.txt";
  model::RandomModelOptions random;
  random.seed = 7;
  const absl::Status written =
      model::WriteRandomModel(config, dir.string(), random);
  EXPECT_TRUE(written.ok()) << written;
  auto loaded = model::Model::Load(dir.string());
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return loaded.ok() ? *std::move(loaded) : nullptr;
}

std::vector<uint32_t> Ids(int n, int salt) {
  std::vector<uint32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = static_cast<uint32_t>(7 * i + salt) % 64;
  return ids;
}
const std::vector<uint32_t> kShort = Ids(10, 3);
const std::vector<uint32_t> kLong = Ids(20, 5);  // over kMaxTokens

using Rows = std::vector<std::vector<float>>;

// What the model computes, straight from Model::Embed, one sequence alone.
class Reference {
 public:
  explicit Reference(const model::Model* model) : model_(model) {}

  // The output vectors (one per token, or per latent), neither pooled nor
  // normalised.
  Rows Vectors(const std::vector<uint32_t>& ids) const {
    return Embed(ids, model::Pooling::kNone);
  }
  // The mean-pooled vector, not normalised.
  std::vector<float> Pooled(const std::vector<uint32_t>& ids) const {
    return Embed(ids, model::Pooling::kMean).at(0);
  }
  bool latent() const {
    return model_->description().vectors_per_sequence != 0;
  }

 private:
  Rows Embed(const std::vector<uint32_t>& ids, model::Pooling pooling) const {
    const std::vector<int32_t> tokens(ids.begin(), ids.end());
    const std::vector<int64_t> offsets = {0,
                                          static_cast<int64_t>(tokens.size())};
    model::EmbedOptions options;
    options.pooling = pooling;
    options.normalize = false;
    auto out = model_->Embed(tokens, offsets, options);
    EXPECT_TRUE(out.ok()) << out.status();
    Rows rows;
    if (!out.ok()) return rows;
    for (int64_t r = 0; r < out->num_rows(); ++r) {
      rows.emplace_back(out->Row(r).begin(), out->Row(r).end());
    }
    return rows;
  }
  const model::Model* model_;
};

std::vector<uint32_t> Slice(const std::vector<uint32_t>& ids, size_t begin,
                            size_t end) {
  return {ids.begin() + begin, ids.begin() + end};
}

std::vector<float> MeanOf(const Rows& rows, size_t begin, size_t end) {
  std::vector<float> mean(kHidden, 0);
  for (size_t r = begin; r < end; ++r) {
    for (int64_t c = 0; c < kHidden; ++c) mean[c] += rows.at(r)[c];
  }
  for (float& v : mean) v /= static_cast<float>(end - begin);
  return mean;
}

// The first `dimensions` values (all when 0), L2-normalised when `l2`.
std::vector<float> Cut(std::vector<float> v, int dimensions, bool l2) {
  if (dimensions > 0) v.resize(dimensions);
  if (l2) {
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    norm = std::max(std::sqrt(norm), 1e-12);
    for (float& x : v) x = static_cast<float>(x / norm);
  }
  return v;
}

// EMBEDDING_TYPE_INT8 and _BINARY of `values`, as favor.proto defines them.
std::string Int8Of(const std::vector<float>& values) {
  std::string out;
  for (float x : values) {
    const long q = std::lround(127.0 * x);
    out.push_back(static_cast<char>(std::clamp<long>(q, -127, 127)));
  }
  return out;
}
std::string BinaryOf(const std::vector<float>& values) {
  std::string out((values.size() + 7) / 8, '\0');
  std::vector<uint8_t> bits(out.size(), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > 0) bits[i / 8] |= static_cast<uint8_t>(0x80 >> (i % 8));
  }
  for (size_t b = 0; b < bits.size(); ++b) {
    out[b] = static_cast<char>(static_cast<int>(bits[b]) - 128);
  }
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4) << what << " [" << i << "]";
  }
}
template <typename Field>
std::vector<float> Floats(const Field& field) {
  return {field.begin(), field.end()};
}

void ExpectTokenRows(const v1::Tensor& tensor, const Rows& want,
                     const std::string& what) {
  ASSERT_EQ(tensor.shape_size(), 2) << what;
  EXPECT_EQ(tensor.shape(0), static_cast<int64_t>(want.size())) << what;
  EXPECT_EQ(tensor.shape(1), kHidden) << what;
  const std::vector<float> got = service::FloatsOf(tensor);
  ASSERT_EQ(got.size(), want.size() * kHidden) << what;
  for (size_t r = 0; r < want.size(); ++r) {
    ExpectNear({got.begin() + r * kHidden, got.begin() + (r + 1) * kHidden},
               want[r], absl::StrCat(what, " row ", r));
  }
}

// A 400 in OpenAI's error shape, its "error".
nlohmann::json ExpectRefusal(const absl::StatusOr<testing::Fetched>& got) {
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return {};
  EXPECT_EQ(got->status, 400) << got->body;
  const nlohmann::json body = nlohmann::json::parse(got->body, nullptr, false);
  if (!body.is_object() || !body.contains("error")) {
    ADD_FAILURE() << got->body;
    return {};
  }
  return body["error"];
}

// One combination: the request, then either the refusal's words (per block
// type; empty: answered) or the check of the answer against the reference.
struct Case {
  std::string name;
  std::function<void(v1::EmbedRequest&)> build;
  // Indexed by BlockType: a substring of the INVALID_ARGUMENT message, or
  // "" when the block type answers.
  std::function<std::string(BlockType)> refused;
  std::function<void(const v1::EmbedResponse&, const Reference&,
                     const std::string&)>
      check;
};

std::string Never(BlockType) { return ""; }
std::string OnLatents(BlockType block) {
  return block == BlockType::kCrossAttention ? "outputs latents, not one vector"
                                             : "";
}
std::function<std::string(BlockType)> Always(std::string words) {
  return [words](BlockType) { return words; };
}

void AddInput(v1::EmbedRequest& request, const std::vector<uint32_t>& ids,
              std::vector<std::pair<int64_t, int64_t>> spans = {}) {
  v1::EmbedInput* input = request.add_inputs();
  input->mutable_token_ids()->Add(ids.begin(), ids.end());
  for (const auto& [begin, end] : spans) {
    v1::Span* span = input->add_spans();
    span->set_begin(begin);
    span->set_end(end);
  }
}

// The pooled vector, the token rows and the spans of one answered input,
// each as the reference computes it from `ids` (the tokens the model read).
void ExpectEmbedding(const v1::Embedding& e, const Reference& ref,
                     const std::vector<uint32_t>& ids, int dimensions, bool l2,
                     bool pooled, bool token_rows,
                     const std::vector<std::pair<int64_t, int64_t>>& spans,
                     const std::string& what) {
  const Rows vectors = ref.Vectors(ids);
  EXPECT_EQ(e.num_tokens(), static_cast<int64_t>(ids.size())) << what;
  if (pooled) {
    // The reference's mean pooling, and the same mean recomputed from the
    // vectors (over the latents, for cross-attention).
    const std::vector<float> want = Cut(ref.Pooled(ids), dimensions, l2);
    ExpectNear(Floats(e.values()), want, what + " pooled");
    ExpectNear(want, Cut(MeanOf(vectors, 0, vectors.size()), dimensions, l2),
               what + " pooled from the vectors");
  } else {
    EXPECT_EQ(e.values_size(), 0) << what;
  }
  if (token_rows) {
    EXPECT_EQ(static_cast<int64_t>(vectors.size()),
              ref.latent() ? kLatents : static_cast<int64_t>(ids.size()))
        << what;
    // Every row normalised as the call asks, all hidden_size values of it
    // (dimensions cuts pooled vectors only).
    Rows rows = vectors;
    for (std::vector<float>& row : rows) row = Cut(row, 0, l2);
    ExpectTokenRows(e.token_embeddings(), rows, what + " token rows");
  } else {
    EXPECT_FALSE(e.has_token_embeddings()) << what;
  }
  ASSERT_EQ(e.spans_size(), static_cast<int>(spans.size())) << what;
  for (size_t s = 0; s < spans.size(); ++s) {
    const auto [begin, end] = spans[s];
    ExpectNear(Floats(e.spans(s).values()),
               Cut(MeanOf(vectors, begin, end), dimensions, l2),
               absl::StrCat(what, " span ", s));
    EXPECT_EQ(e.spans(s).num_tokens(), end - begin) << what;
  }
}

std::vector<Case> Cases() {
  using Spans = std::vector<std::pair<int64_t, int64_t>>;
  const Spans spans = {{0, 3}, {2, 10}};
  std::vector<Case> cases;
  cases.push_back({"Pooled", [](v1::EmbedRequest& r) { AddInput(r, kShort); },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     true, false, {}, w);
                   }});
  cases.push_back({"PooledL2",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_normalization(v1::NORMALIZATION_L2);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, true,
                                     true, false, {}, w);
                   }});
  cases.push_back({"TokenEmbeddings",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_include_token_embeddings(true);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     true, true, {}, w);
                   }});
  cases.push_back({"PoolingNone",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_pooling(v1::POOLING_NONE);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     false, true, {}, w);
                   }});
  cases.push_back({"Spans",
                   [spans](v1::EmbedRequest& r) { AddInput(r, kShort, spans); },
                   OnLatents,
                   [spans](const v1::EmbedResponse& a, const Reference& ref,
                           const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     true, false, spans, w);
                   }});
  // Within the latents' rows (4): still refused, since a span counts tokens.
  cases.push_back({"SpanWithinTheLatentCount",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort, {{1, 3}});
                   },
                   OnLatents,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     true, false, {{1, 3}}, w);
                   }});
  // A second input with spans, after one without: the refusal names it.
  cases.push_back({"SpansOnASecondInput",
                   [spans](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     AddInput(r, kShort, spans);
                   },
                   [](BlockType b) {
                     return b == BlockType::kCrossAttention
                                ? "inputs[1].spans: model"
                                : "";
                   },
                   [spans](const v1::EmbedResponse& a, const Reference& ref,
                           const std::string& w) {
                     ASSERT_EQ(a.embeddings_size(), 2) << w;
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     true, false, {}, w + " input 0");
                     ExpectEmbedding(a.embeddings(1), ref, kShort, 0, false,
                                     true, false, spans, w + " input 1");
                   }});
  cases.push_back({"SpansWithTokenEmbeddingsDimensionsL2",
                   [spans](v1::EmbedRequest& r) {
                     AddInput(r, kShort, spans);
                     r.set_include_token_embeddings(true);
                     r.set_dimensions(8);
                     r.set_normalization(v1::NORMALIZATION_L2);
                   },
                   OnLatents,
                   [spans](const v1::EmbedResponse& a, const Reference& ref,
                           const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 8, true,
                                     true, true, spans, w);
                   }});
  cases.push_back({"SpansWithPoolingNone",
                   [spans](v1::EmbedRequest& r) {
                     AddInput(r, kShort, spans);
                     r.set_pooling(v1::POOLING_NONE);
                   },
                   OnLatents,
                   [spans](const v1::EmbedResponse& a, const Reference& ref,
                           const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     false, true, spans, w);
                   }});
  cases.push_back({"Dimensions8",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_dimensions(8);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 8, false,
                                     true, false, {}, w);
                   }});
  cases.push_back({"Dimensions8L2",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_dimensions(8);
                     r.set_normalization(v1::NORMALIZATION_L2);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 8, true,
                                     true, false, {}, w);
                   }});
  cases.push_back({"DimensionsAtHidden",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_dimensions(kHidden);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref, kShort, 0, false,
                                     true, false, {}, w);
                   }});
  cases.push_back({"DimensionsOverHidden",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_dimensions(kHidden + 1);
                   },
                   Always("dimensions"), nullptr});
  cases.push_back({"TruncationNoneTooLong",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong);
                     r.set_truncation(v1::TRUNCATION_NONE);
                   },
                   Always("max_tokens_per_input"), nullptr});
  cases.push_back({"TruncationRightWithTokenEmbeddings",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong);
                     r.set_truncation(v1::TRUNCATION_RIGHT);
                     r.set_include_token_embeddings(true);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref,
                                     Slice(kLong, 0, kMaxTokens), 0, false,
                                     true, true, {}, w);
                     EXPECT_EQ(a.embeddings(0).num_truncated_tokens(),
                               static_cast<int64_t>(kLong.size()) - kMaxTokens);
                   }});
  cases.push_back({"TruncationLeftWithTokenEmbeddings",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong);
                     r.set_truncation(v1::TRUNCATION_LEFT);
                     r.set_include_token_embeddings(true);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(
                         a.embeddings(0), ref,
                         Slice(kLong, kLong.size() - kMaxTokens, kLong.size()),
                         0, false, true, true, {}, w);
                     EXPECT_EQ(a.embeddings(0).num_truncated_tokens(),
                               static_cast<int64_t>(kLong.size()) - kMaxTokens);
                   }});
  cases.push_back({"TruncationRightWithSpans",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong, {{12, 16}});
                     r.set_truncation(v1::TRUNCATION_RIGHT);
                   },
                   OnLatents,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     ExpectEmbedding(a.embeddings(0), ref,
                                     Slice(kLong, 0, kMaxTokens), 0, false,
                                     true, false, {{12, 16}}, w);
                   }});
  cases.push_back({"TruncationChunkPooled",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong);
                     r.set_truncation(v1::TRUNCATION_CHUNK);
                   },
                   Never,
                   [](const v1::EmbedResponse& a, const Reference& ref,
                      const std::string& w) {
                     // Windows [0, 16) and [16, 20), weighted by tokens.
                     const std::vector<float> first =
                         ref.Pooled(Slice(kLong, 0, kMaxTokens));
                     const std::vector<float> second =
                         ref.Pooled(Slice(kLong, kMaxTokens, kLong.size()));
                     std::vector<float> want(kHidden);
                     for (int64_t c = 0; c < kHidden; ++c) {
                       want[c] = (kMaxTokens * first[c] +
                                  (kLong.size() - kMaxTokens) * second[c]) /
                                 kLong.size();
                     }
                     const v1::Embedding& e = a.embeddings(0);
                     ExpectNear(Floats(e.values()), want, w);
                     EXPECT_EQ(e.num_chunks(), 2) << w;
                   }});
  cases.push_back({"TruncationChunkWithSpans",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong, {{0, 3}});
                     r.set_truncation(v1::TRUNCATION_CHUNK);
                   },
                   Always("not with truncation TRUNCATION_CHUNK"), nullptr});
  cases.push_back({"TruncationChunkWithTokenEmbeddings",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kLong);
                     r.set_truncation(v1::TRUNCATION_CHUNK);
                     r.set_include_token_embeddings(true);
                   },
                   Always("cannot return token embeddings"), nullptr});
  cases.push_back(
      {"EmbeddingTypesInt8BinaryL2",
       [](v1::EmbedRequest& r) {
         AddInput(r, kShort);
         r.set_normalization(v1::NORMALIZATION_L2);
         r.add_embedding_types(v1::EMBEDDING_TYPE_FLOAT);
         r.add_embedding_types(v1::EMBEDDING_TYPE_INT8);
         r.add_embedding_types(v1::EMBEDDING_TYPE_BINARY);
       },
       Never,
       [](const v1::EmbedResponse& a, const Reference& ref,
          const std::string& w) {
         const v1::Embedding& e = a.embeddings(0);
         ExpectEmbedding(e, ref, kShort, 0, true, true, false, {}, w);
         EXPECT_EQ(e.quantized().int8(), Int8Of(Floats(e.values()))) << w;
         EXPECT_EQ(e.quantized().binary(), BinaryOf(Floats(e.values()))) << w;
         EXPECT_TRUE(e.quantized().uint8().empty()) << w;
       }});
  cases.push_back({"EmbeddingTypesOnSpansWithoutFloat",
                   [spans](v1::EmbedRequest& r) {
                     AddInput(r, kShort, spans);
                     r.set_normalization(v1::NORMALIZATION_L2);
                     r.set_dimensions(16);
                     r.add_embedding_types(v1::EMBEDDING_TYPE_INT8);
                   },
                   OnLatents,
                   [spans](const v1::EmbedResponse& a, const Reference& ref,
                           const std::string& w) {
                     const v1::Embedding& e = a.embeddings(0);
                     const Rows vectors = ref.Vectors(kShort);
                     EXPECT_EQ(e.values_size(), 0) << w;
                     EXPECT_EQ(e.quantized().int8(),
                               Int8Of(Cut(ref.Pooled(kShort), 16, true)))
                         << w;
                     ASSERT_EQ(e.spans_size(), 2) << w;
                     for (int s = 0; s < 2; ++s) {
                       EXPECT_EQ(e.spans(s).values_size(), 0) << w;
                       EXPECT_EQ(e.spans(s).quantized().int8(),
                                 Int8Of(Cut(MeanOf(vectors, spans[s].first,
                                                   spans[s].second),
                                            16, true)))
                           << w << " span " << s;
                     }
                   }});
  cases.push_back({"EmbeddingTypesWithPoolingNone",
                   [](v1::EmbedRequest& r) {
                     AddInput(r, kShort);
                     r.set_pooling(v1::POOLING_NONE);
                     r.add_embedding_types(v1::EMBEDDING_TYPE_INT8);
                   },
                   Always("POOLING_NONE"), nullptr});
  return cases;
}

// A FavorService over one model of the block type, on gRPC (loopback) and
// behind the HTTP API, as favor-server wires them.
class BlocksTest : public ::testing::TestWithParam<BlockType> {
 protected:
  void SetUp() override {
    KeepCallbackQueueAlive();
    model_ = LoadBlockModel(GetParam());
    ASSERT_NE(model_, nullptr);
    metrics::Metrics::Options metrics_options;
    metrics_options.serve_http = false;
    metrics_options.models = {model_->name()};
    metrics_ = *metrics::Metrics::Create(metrics_options);
    const service::FavorService::Options service_options;
    auto service = service::FavorService::Create(
        service_options, {model_.get()}, metrics_.get());
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = *std::move(service);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    grpc_ = builder.BuildAndStart();
    ASSERT_NE(grpc_, nullptr);
    stub_ = v1::Favor::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    ApiHandler::Options api_options;
    api_options.in_process_key = service_->in_process_key();
    handler_ = std::make_unique<ApiHandler>(
        api_options, grpc_->InProcessChannel(grpc::ChannelArguments()),
        [] { return true; }, metrics_.get());
    HttpServer::Options http_options;
    http_options.port = 0;
    auto http = HttpServer::Create(http_options, handler_.get());
    ASSERT_TRUE(http.ok()) << http.status();
    http_ = *std::move(http);
  }
  void TearDown() override {
    if (service_ != nullptr) service_->Shutdown(absl::ZeroDuration());
    if (grpc_ != nullptr) {
      grpc_->Shutdown();
      grpc_->Wait();
    }
    if (http_ != nullptr) http_->Shutdown(absl::Seconds(5));
  }

  absl::StatusOr<testing::Fetched> Post(absl::string_view route,
                                        std::string body) {
    return testing::Post(http_->port(), route, std::move(body));
  }

  std::unique_ptr<model::Model> model_;
  std::unique_ptr<metrics::Metrics> metrics_;
  std::unique_ptr<service::FavorService> service_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<v1::Favor::Stub> stub_;
  std::unique_ptr<ApiHandler> handler_;
  std::unique_ptr<HttpServer> http_;
};

TEST_P(BlocksTest, EveryOptionOverGrpcIsAnsweredOrRefusedByDesign) {
  const Reference ref(model_.get());
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    v1::EmbedRequest request;
    c.build(request);
    v1::EmbedResponse response;
    const grpc::Status status = service::CallEmbed(*stub_, request, &response);
    const std::string refused = c.refused(GetParam());
    if (!refused.empty()) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << status.error_message();
      EXPECT_NE(status.error_message().find(refused), std::string::npos)
          << status.error_message();
      continue;
    }
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.embeddings_size(), request.inputs_size());
    c.check(response, ref, c.name);
  }
}

// The same table as the messages of one EmbedStream, each answered by its
// id: the stream validates each message as Embed does.
TEST_P(BlocksTest, EveryOptionOverEmbedStreamIsAnsweredOrRefusedByDesign) {
  const Reference ref(model_.get());
  const std::vector<Case> cases = Cases();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(60));
  auto stream = stub_->EmbedStream(&context);
  for (const Case& c : cases) {
    v1::EmbedStreamRequest message;
    message.set_request_id(c.name);
    c.build(*message.mutable_request());
    ASSERT_TRUE(stream->Write(message)) << c.name;
  }
  stream->WritesDone();
  std::map<std::string, v1::EmbedStreamResponse> answers;
  v1::EmbedStreamResponse answer;
  while (stream->Read(&answer)) {
    EXPECT_EQ(answers.count(answer.request_id()), 0u) << answer.request_id();
    answers[answer.request_id()] = answer;
  }
  const grpc::Status finished = stream->Finish();
  ASSERT_TRUE(finished.ok()) << finished.error_message();
  ASSERT_EQ(answers.size(), cases.size());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const v1::EmbedStreamResponse& a = answers[c.name];
    const std::string refused = c.refused(GetParam());
    if (!refused.empty()) {
      ASSERT_TRUE(a.has_error());
      EXPECT_EQ(a.error().code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_NE(a.error().message().find(refused), std::string::npos)
          << a.error().message();
      continue;
    }
    ASSERT_TRUE(a.has_response()) << a.error().message();
    v1::EmbedRequest request;
    c.build(request);
    ASSERT_EQ(a.response().embeddings_size(), request.inputs_size());
    c.check(a.response(), ref, c.name);
  }
}

// The same table as JSON on /v1/favor/Embed, the answer read back into an
// EmbedResponse by protobuf's own JSON parser.
TEST_P(BlocksTest, EveryOptionOverHttpFavorEmbedIsAnsweredOrRefusedByDesign) {
  const Reference ref(model_.get());
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    v1::EmbedRequest request;
    c.build(request);
    std::string body;
    ASSERT_TRUE(
        google::protobuf::util::MessageToJsonString(request, &body).ok());
    const auto got = Post("/v1/favor/Embed", body);
    ASSERT_TRUE(got.ok()) << got.status();
    const std::string refused = c.refused(GetParam());
    if (!refused.empty()) {
      const nlohmann::json error = ExpectRefusal(got);
      EXPECT_EQ(error.value("type", ""), "invalid_request_error");
      EXPECT_NE(error.value("message", "").find(refused), std::string::npos)
          << got->body;
      continue;
    }
    ASSERT_EQ(got->status, 200) << got->body;
    v1::EmbedResponse response;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(got->body,
                                                            &response, options)
                    .ok())
        << got->body;
    ASSERT_EQ(response.embeddings_size(), request.inputs_size());
    c.check(response, ref, c.name);
  }
}

// /v1/embeddings: OpenAI's body with its extensions (dimensions, TEI's
// truncate and truncation_direction, embedding_types, late_chunking).
struct OpenAiCase {
  std::string name;
  nlohmann::json body;
  std::function<std::string(BlockType)> refused;
  // Each answered item: the float embedding the reference gives, and the
  // tokens it counts.
  std::function<std::vector<std::pair<std::vector<float>, int64_t>>(
      const Reference&)>
      want;
};

nlohmann::json Json(const std::vector<uint32_t>& ids) {
  return nlohmann::json(ids);
}

std::vector<OpenAiCase> OpenAiCases() {
  // "the cat sat on the mat" is [CLS]=2 the=5 cat=6 sat=7 on=8 the=5 mat=9
  // [SEP]=3; late chunking joins the chunks with one space.
  const std::vector<uint32_t> sentence = {2, 5, 6, 7, 8, 5, 9, 3};
  std::vector<OpenAiCase> cases;
  cases.push_back(
      {"Pooled", {{"input", {Json(kShort)}}}, Never, [](const Reference& ref) {
         return std::vector<std::pair<std::vector<float>, int64_t>>{
             {ref.Pooled(kShort), 10}};
       }});
  cases.push_back({"Text",
                   {{"input", "the cat sat on the mat"}},
                   Never,
                   [sentence](const Reference& ref) {
                     return std::vector<std::pair<std::vector<float>, int64_t>>{
                         {ref.Pooled(sentence), 8}};
                   }});
  cases.push_back({"Dimensions8",
                   {{"input", {Json(kShort)}}, {"dimensions", 8}},
                   Never,
                   [](const Reference& ref) {
                     return std::vector<std::pair<std::vector<float>, int64_t>>{
                         {Cut(ref.Pooled(kShort), 8, false), 10}};
                   }});
  cases.push_back({"DimensionsOverHidden",
                   {{"input", {Json(kShort)}}, {"dimensions", kHidden + 1}},
                   Always("dimensions"),
                   nullptr});
  cases.push_back({"TooLongWithoutTruncate",
                   {{"input", {Json(kLong)}}},
                   Always("max_tokens_per_input"),
                   nullptr});
  cases.push_back({"TruncateRight",
                   {{"input", {Json(kLong)}}, {"truncate", true}},
                   Never,
                   [](const Reference& ref) {
                     return std::vector<std::pair<std::vector<float>, int64_t>>{
                         {ref.Pooled(Slice(kLong, 0, kMaxTokens)), kMaxTokens}};
                   }});
  cases.push_back(
      {"TruncateLeft",
       {{"input", {Json(kLong)}},
        {"truncate", true},
        {"truncation_direction", "left"}},
       Never,
       [](const Reference& ref) {
         return std::vector<std::pair<std::vector<float>, int64_t>>{
             {ref.Pooled(Slice(kLong, kLong.size() - kMaxTokens, kLong.size())),
              kMaxTokens}};
       }});
  cases.push_back(
      {"LateChunking",
       {{"input", {"the cat", "sat on the mat"}}, {"late_chunking", true}},
       OnLatents,
       [sentence](const Reference& ref) {
         const Rows vectors = ref.Vectors(sentence);
         return std::vector<std::pair<std::vector<float>, int64_t>>{
             {MeanOf(vectors, 1, 3), 2}, {MeanOf(vectors, 3, 7), 4}};
       }});
  cases.push_back({"LateChunkingDimensions8",
                   {{"input", {"the cat", "sat on the mat"}},
                    {"late_chunking", true},
                    {"dimensions", 8}},
                   OnLatents,
                   [sentence](const Reference& ref) {
                     const Rows vectors = ref.Vectors(sentence);
                     return std::vector<std::pair<std::vector<float>, int64_t>>{
                         {Cut(MeanOf(vectors, 1, 3), 8, false), 2},
                         {Cut(MeanOf(vectors, 3, 7), 8, false), 4}};
                   }});
  cases.push_back({"LateChunkingTruncated",
                   {{"input", {"the cat", "sat on the mat"}},
                    {"late_chunking", true},
                    {"truncate", true}},
                   Always("cannot be truncated"),
                   nullptr});
  return cases;
}

TEST_P(BlocksTest, EveryOptionOverOpenAiEmbeddingsIsAnsweredOrRefusedByDesign) {
  const Reference ref(model_.get());
  for (const OpenAiCase& c : OpenAiCases()) {
    SCOPED_TRACE(c.name);
    const auto got = Post("/v1/embeddings", c.body.dump());
    ASSERT_TRUE(got.ok()) << got.status();
    const std::string refused = c.refused(GetParam());
    if (!refused.empty()) {
      const nlohmann::json error = ExpectRefusal(got);
      EXPECT_EQ(error.value("type", ""), "invalid_request_error");
      EXPECT_NE(error.value("message", "").find(refused), std::string::npos)
          << got->body;
      continue;
    }
    ASSERT_EQ(got->status, 200) << got->body;
    const nlohmann::json answer = nlohmann::json::parse(got->body);
    const auto want = c.want(ref);
    ASSERT_EQ(answer["data"].size(), want.size()) << got->body;
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectNear(answer["data"][i]["embedding"].get<std::vector<float>>(),
                 want[i].first, absl::StrCat(c.name, " data ", i));
      EXPECT_EQ(answer["inputs"][i]["tokens"].get<int64_t>(), want[i].second);
    }
    // Quantised forms of the same body, from the floats just answered.
    nlohmann::json typed = c.body;
    typed["embedding_types"] = {"float", "int8", "binary"};
    const auto quantized = Post("/v1/embeddings", typed.dump());
    ASSERT_TRUE(quantized.ok()) << quantized.status();
    ASSERT_EQ(quantized->status, 200) << quantized->body;
    const nlohmann::json q = nlohmann::json::parse(quantized->body);
    for (size_t i = 0; i < want.size(); ++i) {
      const nlohmann::json& types = q["data"][i]["embeddings"];
      const auto floats = types["float"].get<std::vector<float>>();
      ExpectNear(floats, want[i].first, c.name + " typed float");
      std::string int8;
      for (int v : types["int8"]) int8.push_back(static_cast<char>(v));
      std::string binary;
      for (int v : types["binary"]) binary.push_back(static_cast<char>(v));
      EXPECT_EQ(int8, Int8Of(floats)) << c.name;
      EXPECT_EQ(binary, BinaryOf(floats)) << c.name;
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<BlockType>& param) {
  return BlockName(param.param);
}

INSTANTIATE_TEST_SUITE_P(AllBlockTypes, BlocksTest,
                         ::testing::Values(BlockType::kEncoder,
                                           BlockType::kCrossAttention,
                                           BlockType::kIsab),
                         ParamName);

}  // namespace
}  // namespace favor::http
