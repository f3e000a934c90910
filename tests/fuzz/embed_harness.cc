#include "tests/fuzz/embed_harness.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "server/common/status_macros.h"
#include "server/model/model.h"
#include "server/service/embed_inputs.h"
#include "server/service/embed_validation.h"
#include "server/tokenizer/tokenizer_builders.h"

namespace favor::fuzz {
namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// Short sequences, so that truncation and chunking happen on short inputs.
constexpr int64_t kMaxSequenceLength = 16;

constexpr char kVocab[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nquick\nbrown\nfox\njumps\n"
    "over\nlazy\ndog\n##s\n##ing\n.\n,\na\nb\nc\n##a\n##b\n##c\né\n日\n本\n";

model::ModelDescription MakeModel(bool with_tokenizer) {
  model::ModelDescription model;
  model.name = with_tokenizer ? "default" : "ids-only";
  model.config.vocab_size = 64;
  model.config.hidden_size = 8;
  model.config.num_attention_heads = 2;
  model.config.max_position_embeddings = kMaxSequenceLength;
  model.config.max_sequence_length = kMaxSequenceLength;
  model.embedding_dim = 8;
  model.has_attention_pooling = true;
  if (with_tokenizer) {
    auto tokenizer = tokenizer::TokenizerFromVocabTxt(
        kVocab, tokenizer::VocabTxtOptions(), "vocab.txt");
    Require(tokenizer.ok());
    model.tokenizer = std::move(*tokenizer);
  }
  return model;
}

service::EmbedLimits CallLimits() {
  service::EmbedLimits limits;
  limits.max_inputs_per_call = 32;
  limits.max_tokens_per_call = 256;
  limits.max_text_bytes_per_call = 4096;
  limits.max_spans_per_input = 16;
  return limits;
}

void CheckPrepared(const service::PreparedInput& input,
                   const service::EmbedLimits& limits) {
  for (int32_t id : input.token_ids) {
    Require(id >= 0 && id < limits.vocab_size);
  }
  const int64_t size = static_cast<int64_t>(input.token_ids.size());
  if (input.window_offsets.empty()) {
    Require(size <= limits.max_tokens_per_input);
  } else {
    Require(input.window_offsets.front() == 0 &&
            input.window_offsets.back() == size);
    for (size_t w = 1; w < input.window_offsets.size(); ++w) {
      const int64_t length =
          input.window_offsets[w] - input.window_offsets[w - 1];
      Require(length > 0 && length <= limits.max_tokens_per_input);
    }
  }
  for (const service::TokenRange& span : input.spans) {
    Require(span.begin >= 0 && span.begin <= span.end && span.end <= size);
  }
}

}  // namespace

absl::Status CheckAndPrepareEmbed(const v1::EmbedRequest& request) {
  static const auto* const kText = new model::ModelDescription(MakeModel(true));
  static const auto* const kIds = new model::ModelDescription(MakeModel(false));
  const model::ModelDescription& model =
      request.model() == "ids-only" ? *kIds : *kText;
  const service::EmbedLimits limits = service::LimitsFor(model, CallLimits());
  ASSIGN_OR_RETURN(service::ResolvedEmbedOptions options,
                   service::ResolveEmbedOptions(request, model, limits));
  RETURN_IF_ERROR(service::CheckEmbedRequest(request, model, options, limits));
  ASSIGN_OR_RETURN(std::vector<service::PreparedInput> inputs,
                   service::PrepareEmbedInputs(request, options, limits,
                                               model.tokenizer.get()));
  Require(inputs.size() == static_cast<size_t>(request.inputs_size()));
  int64_t total = 0;
  for (const service::PreparedInput& input : inputs) {
    CheckPrepared(input, limits);
    total += static_cast<int64_t>(input.token_ids.size());
  }
  Require(total <= limits.max_tokens_per_call);
  return absl::OkStatus();
}

}  // namespace favor::fuzz
