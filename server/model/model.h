// A loaded Performer encoder: one model of a model repository
// (`<repository>/<name>/config.json` + `model.safetensors`, docs/models.md),
// ready to embed packed batches of token sequences.
//
// Input is a packed batch: the token ids of every sequence concatenated,
// plus offsets (sequence s owns token_ids[offsets[s], offsets[s + 1])).
// Embeddings, projections, norms and feed-forward layers run over all tokens
// at once; attention keeps per-sequence sums; nothing is padded. A
// sequence's embedding does not depend on what it is batched with: only the
// order of some float sums may differ (about 1e-7 relative; the tests hold
// it to 1e-5; in bfloat16 such a difference may flip a stored value's last
// bit, and the tests allow that).
//
// This header is LibTorch-free so that the service and the batcher's runner
// can hold models without including LibTorch; the implementation
// (model.cc, encoder.cc) is the only place that does.
//
// Thread safety: Embed is const and may be called from several threads at
// once (one per batch worker); a Model never changes after Load.
#ifndef FAVOR_SERVER_MODEL_MODEL_H_
#define FAVOR_SERVER_MODEL_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/model/memory_estimate.h"
#include "server/model/model_config.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::model {

// Element type of the weights and of the vectors between layers. The
// linear layers multiply in it; embedding sums, residual sums, norms,
// attention and pooling run in float32 whatever it is. On the CPU, float32
// or bfloat16: bfloat16 needs AVX512-BF16 or AMX-BF16 (LibTorch's bfloat16
// products go through oneDNN, which emulates them slowly elsewhere), and
// float16 has no fast CPU path. kInt8 (CPU only, needs AVX2) keeps
// float32 everywhere but in each layer's four linear layers, which multiply
// int8 weights (quantised at load, per output column) by int8 activations
// (quantised per token as they run) with exact int32 sums
// (server/attention/cpu_gemm_int8.h): about twice float32's speed in those
// products on AVX2, about 1.4x the encoder's, pooled embeddings at a mean
// cosine of 0.9999 to float32's.
// docs/performance.md says when to choose which.
enum class ComputeDType { kFloat32, kBFloat16, kFloat16, kInt8 };

// "float32", "bfloat16", "float16", "int8".
absl::string_view NameOf(ComputeDType dtype);
// Accepts the names above and "fp32", "bf16", "fp16".
absl::StatusOr<ComputeDType> ParseComputeDType(absl::string_view name);

struct ModelOptions {
  // "cpu", "cuda" (device 0) or "cuda:N". CUDA needs a LibTorch built with
  // it and that device present; otherwise Load fails with INVALID_ARGUMENT.
  std::string device = "cpu";
  // float16 needs a CUDA device; bfloat16 a CUDA device or a CPU with
  // AVX512-BF16 or AMX-BF16 (FAILED_PRECONDITION naming the missing
  // instruction sets otherwise); int8 the CPU (INVALID_ARGUMENT on CUDA)
  // with AVX2 (FAILED_PRECONDITION otherwise). The default, float32, gives
  // the same embeddings on every machine.
  ComputeDType dtype = ComputeDType::kFloat32;
  // Tokens per attention chunk of the linear kernels on CPU: extra memory
  // per (sequence, head) task is about chunk × (features + head size)
  // floats. On a GPU, AttentionOptions::gpu_chunk_tokens.
  int64_t attention_chunk_tokens = 256;
  // Tokens per block of the per-token layers (projections, norms,
  // feed-forward) on CPU: each thread takes whole blocks, so the
  // feed-forward's intermediate activations cost block × intermediate_size
  // floats per thread instead of tokens × intermediate_size.
  int64_t cpu_block_tokens = 256;
  // The same on GPU, where blocks run one after another: large enough to
  // fill the device, small enough to bound the intermediate activations of
  // a million-token input.
  int64_t gpu_block_tokens = 65536;
  // On CPU, a batch of several sequences and more tokens than this runs
  // in sub-batches of whole sequences of at most this many tokens (a
  // longer sequence alone, on every thread), each through every layer
  // before the next, so that its activations (about 3 KiB a token at
  // hidden size 256) stay in the caches from one layer to the next
  // instead of going to memory. With at least 4 sub-batches a thread they
  // run side by side, a thread each, with no barrier between layers. The
  // same embeddings, bit for bit. On a batch of 64 sequences of 128 tokens
  // about 1.1x float32's and 1.2x int8's speed of the whole batch layer by
  // layer (docs/performance.md). 0: the whole batch layer by layer (as on
  // GPU, where large batches fill the device).
  int64_t cpu_sub_batch_tokens = 512;
  // Bytes of one attention pass's float32 Q, K, V and output: past it a
  // layer's attention runs over groups of heads, one group's projections
  // at a time, so that a long input's projections never exist whole (a
  // 1M-token input of hidden size 256 would need 4 GiB for all of them;
  // one head's take 1 GiB). 1 GiB keeps every head in one pass up to 256k
  // tokens at that size, as fast as before groups existed.
  int64_t max_attention_pass_bytes = int64_t{1} << 30;
  // Rotary cos/sin tables (4·head_dim bytes per token) larger than this
  // are made block by block instead of whole.
  int64_t max_rotary_table_bytes = int64_t{64} << 20;
};

// Checks `options` as Load does, without loading anything: the sizes, the
// device, and that the dtype runs on it (INVALID_ARGUMENT, or
// FAILED_PRECONDITION naming the instruction sets a CPU lacks for
// bfloat16). For start-up, before any model is read.
absl::Status ValidateModelOptions(const ModelOptions& options);

// Per-request choices; unset fields take the model's defaults (config.json's
// "pooling" and "normalize").
struct EmbedOptions {
  std::optional<Pooling> pooling;
  std::optional<bool> normalize;
  // Also return the output vectors before pooling and normalisation
  // (Embeddings::token_vectors), from the same forward pass: the service
  // pools spans from them (late chunking) and answers token embeddings with
  // them. Ignored with Pooling::kNone, whose rows are those vectors already.
  bool include_token_vectors = false;
};

// The output of Embed: `num_rows()` vectors of `dim` floats, row-major.
// Sequence s owns rows [row_offsets[s], row_offsets[s + 1]): one row with
// pooling, one per token (or per latent, for "cross_attention" models)
// without.
struct Embeddings {
  int64_t dim = 0;
  std::vector<int64_t> row_offsets;
  std::vector<float> values;

  int64_t num_sequences() const {
    return row_offsets.empty() ? 0
                               : static_cast<int64_t>(row_offsets.size()) - 1;
  }
  int64_t num_rows() const {
    return row_offsets.empty() ? 0 : row_offsets.back();
  }
  absl::Span<const float> Row(int64_t row) const {
    return absl::MakeConstSpan(values).subspan(row * dim, dim);
  }

  // With EmbedOptions::include_token_vectors (and a pooling other than
  // kNone): every sequence's output vectors, neither pooled nor normalised,
  // `dim` floats each; sequence s owns rows [token_row_offsets[s],
  // token_row_offsets[s + 1]). Empty otherwise.
  std::vector<int64_t> token_row_offsets;
  std::vector<float> token_vectors;
};

// What GetModel reports; fixed at load time.
struct ModelDescription {
  std::string name;       // the model's folder name
  std::string directory;  // where it was loaded from
  ModelConfig config;     // version, kernel, m, shape, limits, defaults
  std::string device;     // as loaded, e.g. "cpu", "cuda:0"
  ComputeDType dtype = ComputeDType::kFloat32;
  // Elements of every tensor loaded from model.safetensors (BERT's unused
  // tanh pooler excluded). Projections drawn at load time are not counted.
  int64_t parameter_count = 0;
  // F, the feature count of the attention kernel (m, 2m, or the head size
  // for kernels without a projection; 0 for exact softmax).
  int64_t num_features = 0;
  // Stored projection matrices used instead of seeded draws.
  int64_t num_stored_projections = 0;
  // pooler.query is present, so requests may ask for attention pooling.
  bool has_attention_pooling = false;
  // Length of the output vectors (hidden_size).
  int64_t embedding_dim = 0;
  // A batch of several sequences and more tokens than this runs in
  // sub-batches of whole sequences (ModelOptions::cpu_sub_batch_tokens on
  // the CPU); 0: whole batches layer by layer (always on a GPU).
  int64_t sub_batch_tokens = 0;
  // Vectors per sequence without pooling: num_latents for
  // "cross_attention", 0 meaning one per token otherwise.
  int64_t vectors_per_sequence = 0;
  // The tokenizer config.json names (config.tokenizer.file), loaded with
  // the model; null when it has none (token ids only). Shared so that a
  // description can be copied; immutable, so used from any thread.
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
  // What a batch costs in memory (memory_estimate.h): the shape, dtype,
  // limits and threads the model runs with.
  MemoryProfile memory;
  // sentence-transformers' prompts (config_sentence_transformers.json):
  // name → the text put before a text input, and the one applied when a
  // request names none ("" for none).
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;
  // "favor" for Favor's own format, else the Hugging Face class it runs as.
  std::string architecture = "favor";
};

// Checks a packed batch against a model's limits without computing:
// at least one sequence; offsets start at 0, never decrease and end at
// token_ids.size(); no sequence is empty or longer than max_sequence_length;
// every id is in [0, vocab_size). INVALID_ARGUMENT naming the field, the
// offending entry and the limit, e.g. "token_ids[7] is 40000; must be in
// [0, 30522) (vocab_size)".
absl::Status ValidatePackedInput(const ModelConfig& config,
                                 absl::Span<const int32_t> token_ids,
                                 absl::Span<const int64_t> offsets);

class Model {
 public:
  // Loads `directory` (a folder holding config.json and model.safetensors;
  // its base name is the model's name): parses and validates the config,
  // loads the tokenizer it names (model_tokenizer.h),
  // opens the weights with the hardened reader, checks every tensor name and
  // shape against the config (one message listing every problem), and
  // copies the weights to the device in the requested dtype. Errors name
  // the file and are INVALID_ARGUMENT (bad files or options), NOT_FOUND
  // (missing files), FAILED_PRECONDITION (a dtype this CPU cannot run, see
  // ValidateModelOptions) or RESOURCE_EXHAUSTED (out of memory).
  static absl::StatusOr<std::unique_ptr<Model>> Load(
      const std::string& directory, const ModelOptions& options = {});

  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  virtual const ModelDescription& description() const = 0;
  const ModelConfig& config() const { return description().config; }
  const std::string& name() const { return description().name; }

  // Embeds a packed batch (see ValidatePackedInput for what is accepted).
  // INVALID_ARGUMENT for bad input or for attention pooling on a model
  // without pooler.query; INTERNAL (with LibTorch's message) or
  // RESOURCE_EXHAUSTED if the computation fails. Runs in inference mode.
  virtual absl::StatusOr<Embeddings> Embed(
      absl::Span<const int32_t> token_ids, absl::Span<const int64_t> offsets,
      const EmbedOptions& options = {}) const = 0;

 protected:
  Model() = default;
};

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_H_
