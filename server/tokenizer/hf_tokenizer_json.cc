// tokenizer_builders.h: a tokenizer from Hugging Face's tokenizer.json.
//
// The file is not trusted: it is parsed by the strict parser of
// server/common/json_parse.h (no exception escapes, duplicate keys and deep
// nesting refused), and every field the pipeline reads is checked for its
// type and range here, so a hostile file is an error, never a crash or a
// huge allocation. Stages Favor does not implement are refused by name.
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/bert_pre_tokenizer.h"
#include "server/tokenizer/pipeline_tokenizer.h"
#include "server/tokenizer/template_processing.h"
#include "server/tokenizer/tokenizer_builders.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max() - 1;

absl::Status Invalid(absl::string_view where, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
}

// The member `key` of `object`, or nullptr when absent or null (Hugging Face
// writes null for "not set").
const Json* Member(const Json& object, const char* key) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return nullptr;
  return &*found;
}

absl::StatusOr<bool> GetBool(const Json& object, const char* key, bool fallback,
                             absl::string_view where) {
  const Json* value = Member(object, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be a boolean, got ",
                                       DescribeJson(*value)));
  }
  return value->get<bool>();
}

absl::StatusOr<std::string> GetString(const Json& object, const char* key,
                                      absl::string_view fallback,
                                      absl::string_view where) {
  const Json* value = Member(object, key);
  if (value == nullptr) return std::string(fallback);
  if (!value->is_string()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be a string, got ",
                                       DescribeJson(*value)));
  }
  return value->get<std::string>();
}

// An integer in [low, high]; floats, huge numbers and other types refused.
absl::StatusOr<int64_t> GetInt(const Json& value, int64_t low, int64_t high,
                               absl::string_view where) {
  const bool fits = value.is_number_unsigned()
                        ? value.get<uint64_t>() <= static_cast<uint64_t>(high)
                        : value.is_number_integer();
  if (fits) {
    const auto number = value.get<int64_t>();
    if (number >= low && number <= high) return number;
  }
  return Invalid(where, absl::StrCat("must be an integer in [", low, ", ", high,
                                     "], got ", DescribeJson(value)));
}

absl::StatusOr<const Json*> GetObject(const Json& parent, const char* key,
                                      absl::string_view where) {
  const Json* value = Member(parent, key);
  if (value == nullptr) return value;
  if (!value->is_object()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be an object, got ",
                                       DescribeJson(*value)));
  }
  return value;
}

absl::StatusOr<std::string> TypeOf(const Json& stage, absl::string_view where) {
  ASSIGN_OR_RETURN(std::string type, GetString(stage, "type", "", where));
  if (type.empty()) return Invalid(where, "\"type\" is missing");
  return type;
}

absl::Status CheckUtf8(absl::string_view text, absl::string_view where) {
  return ValidateUtf8(text, where);
}

// model.vocab: {piece: id}, the ids exactly 0..n-1.
absl::StatusOr<std::vector<std::string>> ParseVocab(const Json& model,
                                                    absl::string_view what) {
  const std::string where = absl::StrCat(what, ": model.vocab");
  ASSIGN_OR_RETURN(const Json* vocab, GetObject(model, "vocab", where));
  if (vocab == nullptr || vocab->empty()) return Invalid(where, "is missing");
  const auto size = static_cast<int64_t>(vocab->size());
  std::vector<std::string> pieces(vocab->size());
  std::vector<bool> seen(vocab->size(), false);
  for (const auto& [piece, id_json] : vocab->items()) {
    const std::string entry = absl::StrCat(where, "[", Quote(piece), "]");
    ASSIGN_OR_RETURN(const int64_t id, GetInt(id_json, 0, size - 1, entry));
    if (seen[id]) {
      return Invalid(entry, absl::StrCat("id ", id,
                                         " is used twice (the ids "
                                         "must be 0..n-1, each once)"));
    }
    seen[id] = true;
    pieces[id] = piece;
  }
  return pieces;
}

absl::StatusOr<std::unique_ptr<Model>> ParseModel(const Json& root,
                                                  absl::string_view what) {
  const std::string where = absl::StrCat(what, ": model");
  ASSIGN_OR_RETURN(const Json* model, GetObject(root, "model", what));
  if (model == nullptr) return Invalid(where, "is missing");
  ASSIGN_OR_RETURN(const std::string type, TypeOf(*model, where));
  if (type != "WordPiece") {
    return Invalid(where, absl::StrCat("type \"", type,
                                       "\" is not supported "
                                       "(supported: WordPiece; SentencePiece "
                                       "models load from their .model file)"));
  }
  WordPiece::Options options;
  ASSIGN_OR_RETURN(options.unk_token,
                   GetString(*model, "unk_token", options.unk_token, where));
  ASSIGN_OR_RETURN(options.continuing_subword_prefix,
                   GetString(*model, "continuing_subword_prefix",
                             options.continuing_subword_prefix, where));
  if (const Json* max_chars = Member(*model, "max_input_chars_per_word")) {
    ASSIGN_OR_RETURN(options.max_input_chars_per_word,
                     GetInt(*max_chars, 1, WordPiece::kMaxInputCharsLimit,
                            absl::StrCat(where, ".max_input_chars_per_word")));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> pieces, ParseVocab(*model, what));
  auto wordpiece = WordPiece::Create(std::move(pieces), options);
  if (!wordpiece.ok()) return Invalid(what, wordpiece.status().message());
  return std::unique_ptr<Model>(*std::move(wordpiece));
}

// The stage object under `key`, nullptr when absent or null; refused unless
// its "type" is `supported` (the one Favor implements).
absl::StatusOr<const Json*> StageOfType(const Json& root, const char* key,
                                        absl::string_view supported,
                                        absl::string_view what) {
  const std::string where = absl::StrCat(what, ": ", key);
  ASSIGN_OR_RETURN(const Json* stage, GetObject(root, key, what));
  if (stage == nullptr) return stage;
  ASSIGN_OR_RETURN(const std::string type, TypeOf(*stage, where));
  if (type != supported) {
    return Invalid(where, absl::StrCat("type \"", type,
                                       "\" is not supported "
                                       "(supported: ",
                                       supported, ")"));
  }
  return stage;
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(
    const Json& root, absl::string_view what) {
  ASSIGN_OR_RETURN(const Json* stage,
                   StageOfType(root, "normalizer", "BertNormalizer", what));
  if (stage == nullptr) return std::unique_ptr<Normalizer>();
  const std::string where = absl::StrCat(what, ": normalizer");
  BertNormalizer::Options options;
  ASSIGN_OR_RETURN(options.clean_text,
                   GetBool(*stage, "clean_text", true, where));
  ASSIGN_OR_RETURN(options.handle_chinese_chars,
                   GetBool(*stage, "handle_chinese_chars", true, where));
  ASSIGN_OR_RETURN(options.lowercase,
                   GetBool(*stage, "lowercase", true, where));
  if (Member(*stage, "strip_accents") != nullptr) {
    ASSIGN_OR_RETURN(options.strip_accents,
                     GetBool(*stage, "strip_accents", false, where));
  }
  return std::unique_ptr<Normalizer>(std::make_unique<BertNormalizer>(options));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(
    const Json& root, absl::string_view what) {
  ASSIGN_OR_RETURN(const Json* stage, StageOfType(root, "pre_tokenizer",
                                                  "BertPreTokenizer", what));
  if (stage == nullptr) return std::unique_ptr<PreTokenizer>();
  return std::unique_ptr<PreTokenizer>(std::make_unique<BertPreTokenizer>());
}

absl::StatusOr<AddedToken> ParseAddedToken(const Json& entry,
                                           absl::string_view where) {
  if (!entry.is_object()) {
    return Invalid(
        where, absl::StrCat("must be an object, got ", DescribeJson(entry)));
  }
  AddedToken token;
  const Json* id = Member(entry, "id");
  if (id == nullptr) return Invalid(where, "\"id\" is missing");
  ASSIGN_OR_RETURN(token.id,
                   GetInt(*id, 0, kMaxId, absl::StrCat(where, ".id")));
  ASSIGN_OR_RETURN(token.content, GetString(entry, "content", "", where));
  RETURN_IF_ERROR(CheckUtf8(token.content, absl::StrCat(where, ".content")));
  ASSIGN_OR_RETURN(token.special, GetBool(entry, "special", false, where));
  ASSIGN_OR_RETURN(token.lstrip, GetBool(entry, "lstrip", false, where));
  ASSIGN_OR_RETURN(token.rstrip, GetBool(entry, "rstrip", false, where));
  ASSIGN_OR_RETURN(const bool single_word,
                   GetBool(entry, "single_word", false, where));
  ASSIGN_OR_RETURN(const bool normalized,
                   GetBool(entry, "normalized", false, where));
  for (const auto& [name, set] :
       {std::pair{"single_word", single_word}, {"normalized", normalized}}) {
    if (set) {
      return Invalid(where, absl::StrCat("\"", name,
                                         "\": true is not supported (only "
                                         "false)"));
    }
  }
  return token;
}

absl::StatusOr<AddedVocabulary> ParseAddedTokens(const Json& root,
                                                 absl::string_view what) {
  const std::string where = absl::StrCat(what, ": added_tokens");
  const Json* list = Member(root, "added_tokens");
  if (list == nullptr) return AddedVocabulary();
  if (!list->is_array()) {
    return Invalid(where,
                   absl::StrCat("must be an array, got ", DescribeJson(*list)));
  }
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(
        AddedToken token,
        ParseAddedToken((*list)[i], absl::StrCat(where, "[", i, "]")));
    tokens.push_back(std::move(token));
  }
  auto vocabulary = AddedVocabulary::Create(std::move(tokens));
  if (!vocabulary.ok()) return Invalid(where, vocabulary.status().message());
  return vocabulary;
}

// TemplateProcessing's "special_tokens" entry for `name`: its ids and
// tokens, one template item each.
absl::Status AddTemplateSpecial(const Json& specials, const std::string& name,
                                absl::string_view where,
                                std::vector<TemplateProcessing::Item>* items) {
  const std::string entry_where =
      absl::StrCat(where, ".special_tokens[", Quote(name), "]");
  const Json* entry = Member(specials, name.c_str());
  if (entry == nullptr || !entry->is_object()) {
    return Invalid(entry_where, "is missing or not an object");
  }
  const Json* ids = Member(*entry, "ids");
  const Json* tokens = Member(*entry, "tokens");
  if (ids == nullptr || tokens == nullptr || !ids->is_array() ||
      !tokens->is_array() || ids->size() != tokens->size()) {
    return Invalid(entry_where,
                   "needs arrays \"ids\" and \"tokens\" of one length");
  }
  for (size_t i = 0; i < ids->size(); ++i) {
    TemplateProcessing::Item item;
    ASSIGN_OR_RETURN(item.id, GetInt((*ids)[i], 0, kMaxId,
                                     absl::StrCat(entry_where, ".ids")));
    if (!(*tokens)[i].is_string()) {
      return Invalid(entry_where, "\"tokens\" must hold strings");
    }
    item.token = (*tokens)[i].get<std::string>();
    RETURN_IF_ERROR(CheckUtf8(item.token, entry_where));
    items->push_back(std::move(item));
  }
  return absl::OkStatus();
}

// A template item's "type_id" must be 0 (or absent): the encoder adds token
// type row 0 to every token (encoder.h), and a template of type 1 would be
// embedded unlike transformers embeds it.
absl::Status CheckTypeId(const Json& item, absl::string_view where) {
  const Json* type_id = Member(item, "type_id");
  if (type_id == nullptr ||
      (type_id->is_number_integer() && type_id->get<int64_t>() == 0)) {
    return absl::OkStatus();
  }
  return Invalid(where, absl::StrCat("\"single\" gives type_id ",
                                     DescribeJson(*type_id),
                                     "; only 0 is supported (Favor adds token "
                                     "type 0 to every token)"));
}

// {"single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}},
// ...], "special_tokens": {...}}; "pair" is not used (one text at a time).
absl::StatusOr<std::vector<TemplateProcessing::Item>> ParseTemplate(
    const Json& stage, absl::string_view where) {
  const Json* single = Member(stage, "single");
  ASSIGN_OR_RETURN(const Json* specials,
                   GetObject(stage, "special_tokens", where));
  if (single == nullptr || !single->is_array() || specials == nullptr) {
    return Invalid(where, "needs a \"single\" array and \"special_tokens\"");
  }
  std::vector<TemplateProcessing::Item> items;
  for (const Json& piece : *single) {
    const Json* special =
        piece.is_object() ? Member(piece, "SpecialToken") : nullptr;
    const Json* sequence =
        piece.is_object() ? Member(piece, "Sequence") : nullptr;
    if (sequence != nullptr && sequence->is_object()) {
      RETURN_IF_ERROR(CheckTypeId(*sequence, where));
      ASSIGN_OR_RETURN(const std::string id,
                       GetString(*sequence, "id", "", where));
      if (id != "A") return Invalid(where, "\"single\" may hold only $A");
      items.push_back({/*is_sequence=*/true, "", 0});
    } else if (special != nullptr && special->is_object()) {
      RETURN_IF_ERROR(CheckTypeId(*special, where));
      ASSIGN_OR_RETURN(const std::string name,
                       GetString(*special, "id", "", where));
      RETURN_IF_ERROR(AddTemplateSpecial(*specials, name, where, &items));
    } else {
      return Invalid(where, absl::StrCat("unexpected \"single\" item ",
                                         DescribeJson(piece)));
    }
  }
  return items;
}

// BertProcessing: {"cls": ["[CLS]", 101], "sep": ["[SEP]", 102]}.
absl::StatusOr<TemplateProcessing::Item> ParseBertSpecial(
    const Json& stage, const char* key, absl::string_view where) {
  const Json* pair = Member(stage, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 ||
      !(*pair)[0].is_string()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be [token, id]"));
  }
  TemplateProcessing::Item item;
  item.token = (*pair)[0].get<std::string>();
  RETURN_IF_ERROR(CheckUtf8(item.token, where));
  ASSIGN_OR_RETURN(
      item.id, GetInt((*pair)[1], 0, kMaxId, absl::StrCat(where, ".", key)));
  return item;
}

absl::Status ParsePostProcessor(const Json& root, absl::string_view what,
                                PipelineTokenizer::Stages* stages) {
  const std::string where = absl::StrCat(what, ": post_processor");
  ASSIGN_OR_RETURN(const Json* stage, GetObject(root, "post_processor", what));
  if (stage == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string type, TypeOf(*stage, where));
  std::vector<TemplateProcessing::Item> items;
  if (type == "TemplateProcessing") {
    ASSIGN_OR_RETURN(items, ParseTemplate(*stage, where));
  } else if (type == "BertProcessing") {
    ASSIGN_OR_RETURN(const auto cls, ParseBertSpecial(*stage, "cls", where));
    ASSIGN_OR_RETURN(const auto sep, ParseBertSpecial(*stage, "sep", where));
    items = {cls, {/*is_sequence=*/true, "", 0}, sep};
  } else {
    return Invalid(where, absl::StrCat("type \"", type,
                                       "\" is not supported "
                                       "(supported: TemplateProcessing, "
                                       "BertProcessing)"));
  }
  for (const auto& item : items) {
    if (!item.is_sequence)
      stages->extra_special_tokens.push_back({item.token, item.id});
  }
  auto processing = TemplateProcessing::Create(std::move(items));
  if (!processing.ok()) return Invalid(where, processing.status().message());
  stages->post_processor = *std::move(processing);
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
  PipelineTokenizer::Stages stages;
  stages.kind = "wordpiece";
  ASSIGN_OR_RETURN(stages.model, ParseModel(root, what));
  ASSIGN_OR_RETURN(stages.normalizer, ParseNormalizer(root, what));
  ASSIGN_OR_RETURN(stages.pre_tokenizer, ParsePreTokenizer(root, what));
  ASSIGN_OR_RETURN(stages.added, ParseAddedTokens(root, what));
  RETURN_IF_ERROR(ParsePostProcessor(root, what, &stages));
  auto tokenizer = std::make_unique<PipelineTokenizer>(std::move(stages));
  RETURN_IF_ERROR(CheckSpecialIds(*tokenizer, what));
  return tokenizer;
}

}  // namespace favor::tokenizer
