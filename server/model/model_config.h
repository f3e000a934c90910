// A model's config.json: the architecture of one Performer encoder in a model
// repository (`<repository>/<name>/config.json` next to `model.safetensors`).
//
// Field names follow Hugging Face's BertConfig where one exists, so that a
// BERT config.json needs only Favor's own fields added; docs/models.md
// documents every field, its default and its limits. The fields' JSON names
// are listed once, in model_config_fields.h, for the reader, the writer and
// operator==; weight_layout.h says which tensors a config implies. Parsing
// is strict: an unknown field is an error
// naming it (a typo must not silently fall back to a default), except
// fields starting with "_" (comments, "_name_or_path") and the Hugging Face
// bookkeeping fields listed in docs/models.md, which are ignored.
//
// No LibTorch: the config is read by tools and the service as well.
#ifndef FAVOR_SERVER_MODEL_MODEL_CONFIG_H_
#define FAVOR_SERVER_MODEL_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/attention/kernel.h"
#include "server/attention/projection.h"

namespace favor::model {

// Feed-forward activation. kGeluTanh is the tanh approximation that Hugging
// Face calls "gelu_new" / "gelu_pytorch_tanh" (both accepted as names).
// kSilu is x·sigmoid(x) (SwiGLU's gate).
enum class Activation { kGelu, kGeluTanh, kRelu, kSilu };
// The feed-forward: dense is W2·act(W1·x); gated (GLU: SwiGLU with silu,
// GeGLU with gelu) is W2·(act(W1·x) ⊙ Wg·x).
enum class FeedForward { kDense, kGated };
// LayerNorm, or ScaleNorm from "Transformers without Tears" (Nguyen & Salazar
// 2019): g · x / max(‖x‖, eps) with one learned scalar g.
enum class NormType { kLayerNorm, kScaleNorm };
// Post-norm (BERT): x = norm(x + f(x)). Pre-norm: x = x + f(norm(x)), plus a
// final norm after the last layer.
enum class NormPlacement { kPost, kPre };
// Learned absolute positions (BERT) limit the length to the table's rows;
// rotary (RoFormer) and none accept any length.
enum class PositionEmbedding { kAbsolute, kRotary, kNone };
// How learned absolute positions are numbered in each sequence.
enum class PositionIds {
  kFromZero,  // 0, 1, 2, …
  // RoBERTa's (XLM-R's): a token equal to pad_token_id takes position
  // pad_token_id, any other pad_token_id + 1 + the number of other
  // non-padding tokens before it, so a sequence without padding counts
  // from pad_token_id + 1.
  kAfterPadding,
};
// What the layers are; docs/models.md draws each.
enum class BlockType {
  kEncoder,         // every layer self-attention over the tokens
  kCrossAttention,  // layer 0: learned latents attend to the tokens (Perceiver
                    // IO); later layers: self-attention over the latents
  kIsab,            // every layer an induced set attention block (Set
                    // Transformer): inducing points attend to the tokens,
                    // then the tokens attend to the result
};
// How a sequence's output vectors become one embedding.
// kMax is the per-feature maximum over the vectors, kLastToken the last
// vector (sentence-transformers' max and lasttoken).
enum class Pooling { kMean, kCls, kAttention, kNone, kMax, kLastToken };
// How a vocab.txt tokenizer strips accents (Hugging Face's strip_accents:
// null, true, false).
enum class AccentStripping { kAsLowercase, kStrip, kKeep };

// Names as config.json spells them.
absl::string_view NameOf(Activation value);
absl::string_view NameOf(NormType value);
absl::string_view NameOf(NormPlacement value);
absl::string_view NameOf(PositionEmbedding value);
absl::string_view NameOf(PositionIds value);
absl::string_view NameOf(FeedForward value);
absl::string_view NameOf(BlockType value);
absl::string_view NameOf(Pooling value);
absl::string_view NameOf(attention::ProjectionOptions::RowNorm value);
absl::string_view NameOf(AccentStripping value);

// Limits ValidateModelConfig enforces; docs/models.md repeats them. They
// keep a hostile or mistyped config from asking for absurd allocations.
struct ModelConfigLimits {
  static constexpr int64_t kMaxVocabSize = (int64_t{1} << 31) - 1;
  static constexpr int64_t kMaxTypeVocabSize = 65536;
  static constexpr int64_t kMaxHiddenSize = 65536;
  static constexpr int64_t kMaxLayers = 1024;
  static constexpr int64_t kMaxHeadDim = 4096;  // as DrawProjection's limit
  static constexpr int64_t kMaxIntermediateSize = int64_t{1} << 20;
  static constexpr int64_t kMaxSequenceLength = (int64_t{1} << 31) - 1;
  static constexpr int64_t kMaxRandomFeatures = 65536;  // as DrawProjection's
  static constexpr int64_t kMaxLatents = 65536;  // latents, inducing points
  static constexpr size_t kMaxVersionBytes = 256;
  static constexpr size_t kMaxConfigFileBytes = size_t{1} << 20;
  static constexpr int64_t kMaxInputCharsPerWord = int64_t{1} << 20;
  static constexpr size_t kMaxTokenBytes = 256;  // a special token's spelling
};

// The "attention" object of config.json.
struct AttentionConfig {
  attention::Kernel kernel = attention::Kernel::kFavorPositive;
  // m, rows of each random projection (kernels with a projection only; the
  // feature count is m, or 2m for hyperbolic and trig). 1 to 65536.
  int64_t num_random_features = 256;
  // Orthogonal random features (Performer's default) or iid Gaussian rows.
  bool orthogonal = true;
  // With orthogonal: each block's rows form a regular simplex instead
  // (projection.h; Reid et al. 2023, lower variance still). Needs a head
  // size of at least 2.
  bool simplex = false;
  // Row norms of orthogonal blocks: "chi" or "sqrt_dim" (projection.h).
  attention::ProjectionOptions::RowNorm row_norm =
      attention::ProjectionOptions::RowNorm::kChi;
  // Attention sublayer a (counted in forward order, from 0) draws its
  // projection with seed projection_seed + a, unless the weights store it.
  uint64_t projection_seed = 0;
  // Token i attends only to tokens ≤ i. Encoder blocks only.
  bool causal = false;
  // ε added to positive features (FAVOR+, hyperbolic, ReLU). ≥ 0.
  double feature_epsilon = 1e-4;
};

// The "tokenizer" object of config.json: the file in the model's folder
// that turns text inputs into token ids (server/tokenizer). The options
// below the file say what a plain vocab.txt cannot (a tokenizer.json and a
// SentencePiece .model carry their own); they are ignored for the others.
struct TokenizerConfig {
  // A file name in the model's folder (no directory part): "tokenizer.json"
  // (Hugging Face), a name ending in ".txt" (BERT's vocab.txt, one piece a
  // line) or in ".model" (SentencePiece). Empty: the model has no tokenizer
  // and accepts token ids only.
  std::string file;
  // vocab.txt: BertNormalizer's options.
  bool lowercase = true;
  AccentStripping strip_accents = AccentStripping::kAsLowercase;
  bool handle_chinese_chars = true;
  bool clean_text = true;
  // vocab.txt: WordPiece's options and the special tokens' spellings.
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  int64_t max_input_chars_per_word = 100;  // 1 to 2^20
  std::string cls_token = "[CLS]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string mask_token = "[MASK]";
  // SentencePiece: put <s> before and </s> after every text.
  bool add_bos = false;
  bool add_eos = false;
};

// What a TokenizerConfig's file is, from its name's ending.
enum class TokenizerFileType {
  kNone,           // no file: token ids only
  kTokenizerJson,  // "*.json": Hugging Face's tokenizer.json
  kVocabTxt,       // "*.txt": one WordPiece piece a line
  kSentencePiece,  // "*.model"
  kUnknown,        // any other name (ValidateModelConfig refuses it)
};
TokenizerFileType TokenizerFileTypeOf(const TokenizerConfig& tokenizer);

struct ModelConfig {
  // Free-form model version, reported by GetModel. At most 256 bytes.
  std::string version;

  // ---- Vocabulary ----
  // Token ids are in [0, vocab_size). 1 to 2^31 − 1.
  int64_t vocab_size = 30522;
  // Rows of embeddings.token_type_embeddings; 0 when the model has none.
  // Requests carry no segment ids: row 0 is added to every token, as BERT
  // does for a single segment. 0 to 65536.
  int64_t type_vocab_size = 2;
  // Special token ids, for clients framing their inputs; −1 when the
  // vocabulary has none, otherwise below vocab_size. Hugging Face configs
  // carry only pad_token_id (default 0); the others default to none, so that
  // a config names only the ids its vocabulary has. A model with a tokenizer
  // fills those left at -1 from it when it loads (AdoptSpecialTokenIds).
  int64_t pad_token_id = 0;
  int64_t unk_token_id = -1;
  int64_t cls_token_id = -1;
  int64_t sep_token_id = -1;
  int64_t mask_token_id = -1;

  // ---- Shape ----
  int64_t hidden_size = 768;         // 1 to 65536, divisible by the heads
  int64_t num_hidden_layers = 12;    // 1 to 1024
  int64_t num_attention_heads = 12;  // head size = hidden / heads ≤ 4096
  int64_t intermediate_size = 3072;  // feed-forward width, 1 to 2^20
  Activation hidden_act = Activation::kGelu;
  FeedForward feed_forward = FeedForward::kDense;
  // Whether the linear layers (attention's and the feed-forward's) and the
  // LayerNorms have biases: NomicBERT's linears and ModernBERT's have none.
  bool linear_bias = true;
  bool norm_bias = true;
  // Pre-norm only: false makes layer 0's attention norm N1 the identity
  // (ModernBERT, whose embeddings norm comes right before it).
  bool first_layer_attention_norm = true;
  NormType norm = NormType::kLayerNorm;
  NormPlacement norm_placement = NormPlacement::kPost;
  // ε of every norm (ScaleNorm: the floor of ‖x‖). > 0.
  double layer_norm_eps = 1e-12;

  // ---- Positions and length ----
  PositionEmbedding position_embedding_type = PositionEmbedding::kAbsolute;
  // Rows of the learned position table (absolute only; ignored otherwise).
  int64_t max_position_embeddings = 512;
  // How a sequence's tokens index that table (absolute only).
  PositionIds position_ids = PositionIds::kFromZero;
  // θ of rotary embeddings (rotary only). > 1.
  double rotary_base = 10000.0;
  // Local layers (ModernBERT): with a window W > 0, layer l is global when
  // l % global_attention_every_n_layers == 0 and local otherwise; a local
  // layer attends exactly to the keys within W / 2 positions of each query
  // (linear in the length), whatever the attention kernel, with rotary
  // base local_rotary_base. 0: every layer global.
  int64_t local_attention_window = 0;
  int64_t global_attention_every_n_layers = 1;
  double local_rotary_base = 10000.0;
  // Longest sequence, in tokens, the server accepts for this model. With
  // absolute positions at most max_position_embeddings. 1 to 2^31 − 1.
  int64_t max_sequence_length = 512;

  AttentionConfig attention;

  // ---- Blocks ----
  BlockType block = BlockType::kEncoder;
  // Learned latent queries of a cross_attention model; the model's output is
  // num_latents vectors per sequence. 1 to 65536 with cross_attention, else 0.
  int64_t num_latents = 0;
  // Inducing points per ISAB layer. 1 to 65536 with isab, else 0.
  int64_t num_inducing_points = 0;

  // ---- Output ----
  // Default pooling; a request may ask for another.
  Pooling pooling = Pooling::kMean;
  // L2-normalise pooled embeddings.
  bool normalize = false;

  // ---- Text ----
  TokenizerConfig tokenizer;

  // hidden_size / num_attention_heads (0 before validation guarantees > 0).
  int64_t head_dim() const {
    return num_attention_heads > 0 ? hidden_size / num_attention_heads : 0;
  }
};

// Checks every field against its limits and the fields against each other.
// INVALID_ARGUMENT naming the field, its value and the limit.
absl::Status ValidateModelConfig(const ModelConfig& config);

// Parses and validates config.json text. Errors are INVALID_ARGUMENT and start
// with `source_name` (usually the file's path).
absl::StatusOr<ModelConfig> ParseModelConfig(absl::string_view json_text,
                                             absl::string_view source_name);

// Reads `path` (at most 1 MiB) and parses it.
absl::StatusOr<ModelConfig> LoadModelConfig(const std::string& path);

// The text of a model folder's small file (a config, an overlay): a regular
// file (a FIFO is refused without waiting for a writer) of at most
// ModelConfigLimits::kMaxConfigFileBytes. NOT_FOUND when it is absent.
absl::StatusOr<std::string> ReadConfigText(const std::string& path);

// Sets the fields of `config` that the JSON object `json_text` names, each
// one of `allowed` (top-level names; an object such as "attention" sets
// only the fields it holds), then validates the result. Returns the fields
// set ("attention.kernel", "max_sequence_length"). INVALID_ARGUMENT starting
// with `source_name` for a field not allowed or not valid.
absl::StatusOr<std::vector<std::string>> ApplyModelConfigOverlay(
    absl::string_view json_text, absl::string_view source_name,
    absl::Span<const absl::string_view> allowed, ModelConfig* config);

// Every field, defaults included, as config.json text that ParseModelConfig
// reads back to an equal config.
std::string ModelConfigToJson(const ModelConfig& config);

bool operator==(const AttentionConfig& a, const AttentionConfig& b);
bool operator!=(const AttentionConfig& a, const AttentionConfig& b);
bool operator==(const TokenizerConfig& a, const TokenizerConfig& b);
bool operator!=(const TokenizerConfig& a, const TokenizerConfig& b);
bool operator==(const ModelConfig& a, const ModelConfig& b);
bool operator!=(const ModelConfig& a, const ModelConfig& b);

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_CONFIG_H_
