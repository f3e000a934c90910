// tokenizer.json's post_processor.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/byte_level_post_processor.h"
#include "server/tokenizer/sequences.h"
#include "server/tokenizer/template_processing.h"
#include "server/tokenizer/tokenizer_json_stages.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer::tokenizer_json {
namespace {

using Items = std::vector<TemplateProcessing::Item>;

// TemplateProcessing's "special_tokens" entry for `name`: its ids and
// tokens, one template item each.
absl::Status AddTemplateSpecial(const Json& specials, const std::string& name,
                                absl::string_view where, Items* items) {
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
    RETURN_IF_ERROR(ValidateUtf8(item.token, entry_where));
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
absl::StatusOr<Items> ParseTemplate(const Json& stage,
                                    absl::string_view where) {
  RETURN_IF_ERROR(
      CheckFields(stage, {"type", "single", "pair", "special_tokens"}, where));
  const Json* single = Member(stage, "single");
  ASSIGN_OR_RETURN(const Json* specials,
                   GetObject(stage, "special_tokens", where));
  if (single == nullptr || !single->is_array() || specials == nullptr) {
    return Invalid(where, "needs a \"single\" array and \"special_tokens\"");
  }
  Items items;
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

// BertProcessing's and RobertaProcessing's {"cls": ["[CLS]", 101], ...}.
absl::StatusOr<TemplateProcessing::Item> ParsePairItem(
    const Json& stage, const char* key, absl::string_view where) {
  const Json* pair = Member(stage, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 ||
      !(*pair)[0].is_string()) {
    return Invalid(where, absl::StrCat("\"", key, "\" must be [token, id]"));
  }
  TemplateProcessing::Item item;
  item.token = (*pair)[0].get<std::string>();
  RETURN_IF_ERROR(ValidateUtf8(item.token, where));
  ASSIGN_OR_RETURN(
      item.id, GetInt((*pair)[1], 0, kMaxId, absl::StrCat(where, ".", key)));
  return item;
}

void AddSpecials(const Items& items, PipelineTokenizer::Stages* stages) {
  for (const auto& item : items) {
    if (!item.is_sequence) {
      stages->extra_special_tokens.push_back({item.token, item.id});
    }
  }
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseFramer(
    const Json& stage, const std::string& type, absl::string_view where,
    PipelineTokenizer::Stages* stages) {
  Items items;
  if (type == "TemplateProcessing") {
    ASSIGN_OR_RETURN(items, ParseTemplate(stage, where));
  } else {
    RETURN_IF_ERROR(CheckFields(stage, {"type", "cls", "sep"}, where));
    ASSIGN_OR_RETURN(const auto cls, ParsePairItem(stage, "cls", where));
    ASSIGN_OR_RETURN(const auto sep, ParsePairItem(stage, "sep", where));
    items = {cls, {/*is_sequence=*/true, "", 0}, sep};
  }
  AddSpecials(items, stages);
  auto processing = TemplateProcessing::Create(std::move(items));
  if (!processing.ok()) return Invalid(where, processing.status().message());
  return std::unique_ptr<PostProcessor>(*std::move(processing));
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseRoberta(
    const Json& stage, absl::string_view where,
    PipelineTokenizer::Stages* stages) {
  RETURN_IF_ERROR(CheckFields(
      stage, {"type", "cls", "sep", "trim_offsets", "add_prefix_space"}, where));
  RobertaProcessing::Options options;
  ASSIGN_OR_RETURN(options.cls, ParsePairItem(stage, "cls", where));
  ASSIGN_OR_RETURN(options.sep, ParsePairItem(stage, "sep", where));
  ASSIGN_OR_RETURN(options.trim_offsets,
                   GetBool(stage, "trim_offsets", true, where));
  ASSIGN_OR_RETURN(options.add_prefix_space,
                   GetBool(stage, "add_prefix_space", true, where));
  AddSpecials({options.cls, options.sep}, stages);
  auto processing = RobertaProcessing::Create(options);
  if (!processing.ok()) return Invalid(where, processing.status().message());
  return std::unique_ptr<PostProcessor>(*std::move(processing));
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseStage(
    const Json& stage, absl::string_view where,
    PipelineTokenizer::Stages* stages);

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseSequence(
    const Json& stage, absl::string_view where,
    PipelineTokenizer::Stages* stages) {
  RETURN_IF_ERROR(CheckFields(stage, {"type", "processors"}, where));
  const Json* list = Member(stage, "processors");
  if (list == nullptr || !list->is_array()) {
    return Invalid(where, "\"processors\" must be an array");
  }
  std::vector<std::unique_ptr<PostProcessor>> children;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(auto child,
                     ParseStage((*list)[i],
                                absl::StrCat(where, ".processors[", i, "]"),
                                stages));
    children.push_back(std::move(child));
  }
  return std::unique_ptr<PostProcessor>(
      std::make_unique<PostProcessorSequence>(std::move(children)));
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseStage(
    const Json& stage, absl::string_view where,
    PipelineTokenizer::Stages* stages) {
  ASSIGN_OR_RETURN(const std::string type, TypeOf(stage, where));
  const std::string at = absl::StrCat(where, " (", type, ")");
  if (type == "TemplateProcessing" || type == "BertProcessing") {
    return ParseFramer(stage, type, at, stages);
  }
  if (type == "RobertaProcessing") return ParseRoberta(stage, at, stages);
  if (type == "ByteLevel") {
    RETURN_IF_ERROR(CheckFields(
        stage, {"type", "add_prefix_space", "trim_offsets", "use_regex"}, at));
    ASSIGN_OR_RETURN(const bool trim, GetBool(stage, "trim_offsets", true, at));
    ASSIGN_OR_RETURN(const bool prefix,
                     GetBool(stage, "add_prefix_space", true, at));
    return std::unique_ptr<PostProcessor>(
        std::make_unique<ByteLevelPostProcessor>(trim, prefix));
  }
  if (type == "Sequence") return ParseSequence(stage, at, stages);
  return Unsupported(where, type,
                     "TemplateProcessing, BertProcessing, RobertaProcessing, "
                     "ByteLevel, Sequence");
}

}  // namespace

absl::Status ParsePostProcessor(const Json& root, absl::string_view what,
                                PipelineTokenizer::Stages* stages) {
  const Json* stage = Member(root, "post_processor");
  if (stage == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      stages->post_processor,
      ParseStage(*stage, absl::StrCat(what, ": post_processor"), stages));
  return absl::OkStatus();
}

}  // namespace favor::tokenizer::tokenizer_json
