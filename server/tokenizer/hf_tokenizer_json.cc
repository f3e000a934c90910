// tokenizer_builders.h: a tokenizer from Hugging Face's tokenizer.json.
//
// The file is not trusted: it is parsed by the strict parser of
// server/common/json_parse.h (no exception escapes, duplicate keys and deep
// nesting refused), and every field the pipeline reads is checked for its
// type and range, so a hostile file is an error, never a crash or a huge
// allocation. Stages and fields Favor does not implement are refused by
// name (tokenizer_json_stages.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/pipeline_tokenizer.h"
#include "server/tokenizer/tokenizer_builders.h"
#include "server/tokenizer/tokenizer_json_fields.h"
#include "server/tokenizer/tokenizer_json_stages.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

using namespace tokenizer_json;  // NOLINT: the loader's own helpers

// One entry of "added_tokens"; *normalized is its "normalized" flag (the
// crate's default: true unless special).
absl::StatusOr<AddedToken> ParseAddedToken(const Json& entry,
                                           absl::string_view where,
                                           bool* normalized) {
  if (!entry.is_object()) {
    return Invalid(
        where, absl::StrCat("must be an object, got ", DescribeJson(entry)));
  }
  AddedToken token;
  const Json* id = Member(entry, "id");
  if (id == nullptr) return Invalid(where, "\"id\" is missing");
  ASSIGN_OR_RETURN(token.id,
                   GetInt(*id, 0, kMaxId, absl::StrCat(where, ".id")));
  RETURN_IF_ERROR(CheckFields(entry,
                              {"id", "content", "single_word", "lstrip",
                               "rstrip", "normalized", "special"},
                              where));
  ASSIGN_OR_RETURN(token.content, GetString(entry, "content", "", where));
  RETURN_IF_ERROR(ValidateUtf8(token.content, absl::StrCat(where, ".content")));
  ASSIGN_OR_RETURN(token.special, GetBool(entry, "special", false, where));
  ASSIGN_OR_RETURN(token.lstrip, GetBool(entry, "lstrip", false, where));
  ASSIGN_OR_RETURN(token.rstrip, GetBool(entry, "rstrip", false, where));
  ASSIGN_OR_RETURN(const bool single_word,
                   GetBool(entry, "single_word", false, where));
  ASSIGN_OR_RETURN(*normalized,
                   GetBool(entry, "normalized", !token.special, where));
  if (single_word) {
    return Invalid(where,
                   "\"single_word\": true is not supported (only false)");
  }
  return token;
}

// "added_tokens" into stages->added (matched in the input) and
// stages->normalized_added (matched in the normalized text, their contents
// normalized as the crate normalizes them). The normalizer must be parsed.
absl::Status ParseAddedTokens(const Json& root, absl::string_view what,
                              PipelineTokenizer::Stages* stages) {
  const std::string where = absl::StrCat(what, ": added_tokens");
  const Json* list = Member(root, "added_tokens");
  if (list == nullptr) return absl::OkStatus();
  if (!list->is_array()) {
    return Invalid(where,
                   absl::StrCat("must be an array, got ", DescribeJson(*list)));
  }
  std::vector<AddedToken> raw;
  std::vector<AddedToken> normalized;
  for (size_t i = 0; i < list->size(); ++i) {
    bool is_normalized = false;
    ASSIGN_OR_RETURN(
        AddedToken token,
        ParseAddedToken((*list)[i], absl::StrCat(where, "[", i, "]"),
                        &is_normalized));
    if (is_normalized && stages->normalizer) {
      NormalizedString content;
      const absl::Status normalized_content =
          stages->normalizer->Normalize(token.content, 0, &content);
      if (!normalized_content.ok()) {
        return Invalid(absl::StrCat(where, "[", i, "]"),
                       normalized_content.message());
      }
      token.content = content.text();
    }
    (is_normalized ? normalized : raw).push_back(std::move(token));
  }
  for (auto [tokens, vocabulary] :
       {std::pair{&raw, &stages->added},
        std::pair{&normalized, &stages->normalized_added}}) {
    auto created = AddedVocabulary::Create(std::move(*tokens));
    if (!created.ok()) return Invalid(where, created.status().message());
    *vocabulary = *std::move(created);
  }
  return absl::OkStatus();
}

// The post-processor's ids must be in the vocabulary (the model's or the
// added tokens'): one past it would reach the model's embedding table.
absl::Status CheckSpecialIds(const Tokenizer& tokenizer,
                             absl::string_view what) {
  for (const SpecialToken& token : tokenizer.special_tokens()) {
    if (static_cast<size_t>(token.id) >= tokenizer.vocab_size()) {
      return Invalid(
          absl::StrCat(what, ": post_processor"),
          absl::StrCat("special token \"", token.content, "\" has id ",
                       token.id, ", outside the vocabulary (",
                       tokenizer.vocab_size(), " ids)"));
    }
  }
  return absl::OkStatus();
}

// The top level: the stages, plus what Favor does not use (truncation and
// padding are options of each call, the decoder turns ids back into text).
absl::Status CheckRoot(const Json& root, absl::string_view what) {
  return CheckFields(
      root,
      {"version", "truncation", "padding", "added_tokens", "normalizer",
       "pre_tokenizer", "model", "post_processor", "decoder"},
      what);
}

}  // namespace

size_t MaxTokenizerJsonValues(size_t vocab_size) {
  constexpr size_t kValuesPerId = 32;
  constexpr size_t kValuesBesideIds = size_t{1} << 20;
  if (vocab_size > (SIZE_MAX - kValuesBesideIds) / kValuesPerId) {
    return SIZE_MAX;
  }
  return kValuesPerId * vocab_size + kValuesBesideIds;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromHuggingFaceJson(
    absl::string_view json, absl::string_view what, size_t max_vocab_size) {
  JsonParseOptions parse;
  if (max_vocab_size > 0) {
    parse.max_values = MaxTokenizerJsonValues(max_vocab_size);
    parse.max_values_reason =
        absl::StrCat("far more than a tokenizer for the model's vocab_size (",
                     max_vocab_size, ") can need");
  }
  ASSIGN_OR_RETURN(const Json root, ParseJsonObject(json, what, parse));
  RETURN_IF_ERROR(CheckRoot(root, what));
  PipelineTokenizer::Stages stages;
  ASSIGN_OR_RETURN(stages.normalizer, ParseNormalizer(root, what));
  ASSIGN_OR_RETURN(ParsedPreTokenizer pre_tokenizer,
                   ParsePreTokenizer(root, what));
  stages.pre_tokenizer = std::move(pre_tokenizer.stage);
  ASSIGN_OR_RETURN(
      stages.model,
      ParseModel(root, what, pre_tokenizer.byte_level, &stages.kind));
  RETURN_IF_ERROR(ParseAddedTokens(root, what, &stages));
  RETURN_IF_ERROR(ParsePostProcessor(root, what, &stages));
  auto tokenizer = std::make_unique<PipelineTokenizer>(std::move(stages));
  RETURN_IF_ERROR(CheckSpecialIds(*tokenizer, what));
  return tokenizer;
}

}  // namespace favor::tokenizer
