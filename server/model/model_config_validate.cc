// ValidateModelConfig: every field against its limits (ModelConfigLimits)
// and the fields against each other.
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/model_config.h"

namespace favor::model {
namespace {

using Limits = ModelConfigLimits;

absl::Status Invalid(absl::string_view field, int64_t value,
                     absl::string_view requirement) {
  return absl::InvalidArgumentError(
      absl::StrCat("field '", field, "' is ", value, "; ", requirement));
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t min,
                        int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return Invalid(field, value,
                 absl::StrCat("must be in [", min, ", ", max, "]"));
}

absl::Status CheckTokenId(absl::string_view field, int64_t id,
                          int64_t vocab_size) {
  if (id == -1 || (id >= 0 && id < vocab_size)) return absl::OkStatus();
  return Invalid(
      field, id,
      absl::StrCat("must be -1 (none) or below vocab_size (", vocab_size, ")"));
}

absl::Status ValidateVocabulary(const ModelConfig& c) {
  if (c.version.size() > Limits::kMaxVersionBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'version' is ", c.version.size(),
                     " bytes long; the limit is ", Limits::kMaxVersionBytes));
  }
  RETURN_IF_ERROR(
      CheckRange("vocab_size", c.vocab_size, 1, Limits::kMaxVocabSize));
  RETURN_IF_ERROR(CheckRange("type_vocab_size", c.type_vocab_size, 0,
                             Limits::kMaxTypeVocabSize));
  RETURN_IF_ERROR(CheckTokenId("pad_token_id", c.pad_token_id, c.vocab_size));
  RETURN_IF_ERROR(CheckTokenId("unk_token_id", c.unk_token_id, c.vocab_size));
  RETURN_IF_ERROR(CheckTokenId("cls_token_id", c.cls_token_id, c.vocab_size));
  RETURN_IF_ERROR(CheckTokenId("sep_token_id", c.sep_token_id, c.vocab_size));
  return CheckTokenId("mask_token_id", c.mask_token_id, c.vocab_size);
}

absl::Status CheckPositiveFinite(absl::string_view field, double value,
                                 double above) {
  if (std::isfinite(value) && value > above) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "field '", field, "' is ", value, "; must be finite and above ", above));
}

absl::Status ValidateShape(const ModelConfig& c) {
  RETURN_IF_ERROR(
      CheckRange("hidden_size", c.hidden_size, 1, Limits::kMaxHiddenSize));
  RETURN_IF_ERROR(CheckRange("num_hidden_layers", c.num_hidden_layers, 1,
                             Limits::kMaxLayers));
  RETURN_IF_ERROR(CheckRange("num_attention_heads", c.num_attention_heads, 1,
                             c.hidden_size));
  if (c.hidden_size % c.num_attention_heads != 0) {
    return Invalid("hidden_size", c.hidden_size,
                   absl::StrCat("must be divisible by num_attention_heads (",
                                c.num_attention_heads, ")"));
  }
  if (c.head_dim() > Limits::kMaxHeadDim) {
    return Invalid(
        "hidden_size", c.hidden_size,
        absl::StrCat("hidden_size / num_attention_heads = ", c.head_dim(),
                     " exceeds the head size limit ", Limits::kMaxHeadDim));
  }
  RETURN_IF_ERROR(CheckRange("intermediate_size", c.intermediate_size, 1,
                             Limits::kMaxIntermediateSize));
  return CheckPositiveFinite("layer_norm_eps", c.layer_norm_eps, 0.0);
}

absl::Status ValidatePositions(const ModelConfig& c) {
  RETURN_IF_ERROR(CheckRange("max_sequence_length", c.max_sequence_length, 1,
                             Limits::kMaxSequenceLength));
  if (c.position_ids != PositionIds::kFromZero &&
      c.position_embedding_type != PositionEmbedding::kAbsolute) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'position_ids' is \"", NameOf(c.position_ids),
        "\", which numbers a learned position table; position_embedding_type "
        "is \"",
        NameOf(c.position_embedding_type), "\""));
  }
  switch (c.position_embedding_type) {
    case PositionEmbedding::kAbsolute: {
      // A learned table has no row for a position past its end; numbered
      // after the padding id, positions start pad_token_id + 1 rows in.
      const bool after_padding = c.position_ids == PositionIds::kAfterPadding;
      if (after_padding && c.pad_token_id < 0) {
        return Invalid("pad_token_id", c.pad_token_id,
                       "position_ids \"after_padding\" needs a padding id");
      }
      const int64_t first = after_padding ? c.pad_token_id + 1 : 0;
      if (c.max_position_embeddings - first < c.max_sequence_length) {
        return Invalid(
            "max_position_embeddings", c.max_position_embeddings,
            absl::StrCat("learned absolute positions need at least "
                         "max_sequence_length (",
                         c.max_sequence_length, ") rows",
                         after_padding ? absl::StrCat(" past the first ",
                                                      first, " (position_ids "
                                                      "\"after_padding\")")
                                       : ""));
      }
      return CheckRange("max_position_embeddings", c.max_position_embeddings, 1,
                        Limits::kMaxSequenceLength);
    }
    case PositionEmbedding::kRotary:
      if (c.block != BlockType::kEncoder) {
        return absl::InvalidArgumentError(absl::StrCat(
            "field 'position_embedding_type' is \"rotary\", which needs "
            "token-to-token attention; block \"",
            NameOf(c.block), "\" has none (use \"absolute\" or \"none\")"));
      }
      if (c.head_dim() % 2 != 0) {
        return Invalid("hidden_size", c.hidden_size,
                       absl::StrCat("rotary embeddings need an even head size"
                                    ", got ",
                                    c.head_dim()));
      }
      return CheckPositiveFinite("rotary_base", c.rotary_base, 1.0);
    case PositionEmbedding::kNone:
      break;
  }
  return absl::OkStatus();
}

absl::Status ValidateAttention(const ModelConfig& c) {
  const AttentionConfig& a = c.attention;
  if (attention::TraitsOf(a.kernel).uses_projection) {
    RETURN_IF_ERROR(CheckRange("attention.num_random_features",
                               a.num_random_features, 1,
                               Limits::kMaxRandomFeatures));
  }
  if (!std::isfinite(a.feature_epsilon) || a.feature_epsilon < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'attention.feature_epsilon' is ", a.feature_epsilon,
                     "; must be finite and ≥ 0"));
  }
  if (a.simplex && (!a.orthogonal || c.head_dim() < 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'attention.simplex' is true, but simplex blocks need "
        "'attention.orthogonal' true and a head size of at least 2 (got "
        "orthogonal ",
        a.orthogonal ? "true" : "false", ", head size ", c.head_dim(), ")"));
  }
  if (a.causal && c.block != BlockType::kEncoder) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'attention.causal' is true, but block \"", NameOf(c.block),
        "\" has no token order to respect (causal needs block \"encoder\")"));
  }
  return absl::OkStatus();
}

// Local layers and the identity first norm (ModernBERT).
absl::Status ValidateLayerKinds(const ModelConfig& c) {
  RETURN_IF_ERROR(CheckRange("local_attention_window", c.local_attention_window,
                             0, Limits::kMaxSequenceLength));
  RETURN_IF_ERROR(CheckRange("global_attention_every_n_layers",
                             c.global_attention_every_n_layers, 1,
                             Limits::kMaxLayers));
  if (c.local_attention_window > 0) {
    if (c.block != BlockType::kEncoder || c.attention.causal) {
      return Invalid("local_attention_window", c.local_attention_window,
                     "local layers need block \"encoder\" without causal "
                     "attention");
    }
    if (c.position_embedding_type == PositionEmbedding::kRotary) {
      RETURN_IF_ERROR(
          CheckPositiveFinite("local_rotary_base", c.local_rotary_base, 1.0));
    }
  }
  if (!c.first_layer_attention_norm &&
      (c.norm_placement != NormPlacement::kPre ||
       c.block != BlockType::kEncoder)) {
    return absl::InvalidArgumentError(
        "field 'first_layer_attention_norm' is false, which needs "
        "norm_placement \"pre\" and block \"encoder\"");
  }
  return absl::OkStatus();
}

absl::Status ValidateBlocks(const ModelConfig& c) {
  const bool cross = c.block == BlockType::kCrossAttention;
  const bool isab = c.block == BlockType::kIsab;
  RETURN_IF_ERROR(CheckRange("num_latents", c.num_latents, cross ? 1 : 0,
                             cross ? Limits::kMaxLatents : 0));
  return CheckRange("num_inducing_points", c.num_inducing_points, isab ? 1 : 0,
                    isab ? Limits::kMaxLatents : 0);
}

absl::Status CheckTokenSpelling(absl::string_view field,
                                const std::string& token) {
  if (!token.empty() && token.size() <= Limits::kMaxTokenBytes) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("field 'tokenizer.", field, "' is ", token.size(),
                   " bytes long; must be 1 to ", Limits::kMaxTokenBytes));
}

absl::Status ValidateTokenizer(const ModelConfig& c) {
  const TokenizerConfig& t = c.tokenizer;
  // A plain name: the file must be in the model's own folder.
  if (absl::StrContains(t.file, '/') || absl::StrContains(t.file, '\0') ||
      t.file == "." || t.file == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'tokenizer.file' is \"", absl::CHexEscape(t.file),
                     "\"; must be a file name in the model's folder, without "
                     "a directory"));
  }
  // A folder's signature leaves hidden files out (model_fingerprint.h), so
  // no reload would see an edited hidden tokenizer.
  if (absl::StartsWith(t.file, ".")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'tokenizer.file' is \"", absl::CHexEscape(t.file),
        "\"; must not be a hidden file (a name starting with '.'), which "
        "a reload does not look at"));
  }
  if (TokenizerFileTypeOf(t) == TokenizerFileType::kUnknown) {
    return absl::InvalidArgumentError(absl::StrCat(
        "field 'tokenizer.file' is \"", absl::CHexEscape(t.file),
        "\"; must end in \".json\" (tokenizer.json), \".txt\" (vocab.txt) "
        "or \".model\" (SentencePiece), or be empty (no tokenizer)"));
  }
  RETURN_IF_ERROR(CheckRange("tokenizer.max_input_chars_per_word",
                             t.max_input_chars_per_word, 1,
                             Limits::kMaxInputCharsPerWord));
  for (const auto& [field, token] :
       {std::pair<absl::string_view, const std::string&>{"unk_token",
                                                         t.unk_token},
        {"cls_token", t.cls_token},
        {"sep_token", t.sep_token},
        {"pad_token", t.pad_token},
        {"mask_token", t.mask_token}}) {
    RETURN_IF_ERROR(CheckTokenSpelling(field, token));
  }
  return absl::OkStatus();
}

}  // namespace

TokenizerFileType TokenizerFileTypeOf(const TokenizerConfig& tokenizer) {
  const std::string& file = tokenizer.file;
  if (file.empty()) return TokenizerFileType::kNone;
  if (absl::EndsWith(file, ".json")) return TokenizerFileType::kTokenizerJson;
  if (absl::EndsWith(file, ".txt")) return TokenizerFileType::kVocabTxt;
  if (absl::EndsWith(file, ".model")) return TokenizerFileType::kSentencePiece;
  return TokenizerFileType::kUnknown;
}

absl::Status ValidateModelConfig(const ModelConfig& config) {
  RETURN_IF_ERROR(ValidateVocabulary(config));
  RETURN_IF_ERROR(ValidateShape(config));
  RETURN_IF_ERROR(ValidatePositions(config));
  RETURN_IF_ERROR(ValidateAttention(config));
  RETURN_IF_ERROR(ValidateBlocks(config));
  RETURN_IF_ERROR(ValidateLayerKinds(config));
  return ValidateTokenizer(config);
}

}  // namespace favor::model
