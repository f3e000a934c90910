// tokenizer.json's normalizer, pre_tokenizer and post_processor.
#include "server/tokenizer/tokenizer_json_stages.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/bert_normalizer.h"
#include "server/tokenizer/bert_pre_tokenizer.h"
#include "server/tokenizer/byte_level_post_processor.h"
#include "server/tokenizer/byte_level_pre_tokenizer.h"
#include "server/tokenizer/character_normalizers.h"
#include "server/tokenizer/metaspace_pre_tokenizer.h"
#include "server/tokenizer/precompiled_normalizer.h"
#include "server/tokenizer/regex.h"
#include "server/tokenizer/sequences.h"
#include "server/tokenizer/split_pre_tokenizer.h"
#include "server/tokenizer/template_processing.h"
#include "server/tokenizer/unicode.h"
#include "server/tokenizer/unicode_normalizer.h"

namespace favor::tokenizer::tokenizer_json {
namespace {

constexpr absl::string_view kChainableNormalizers =
    "BertNormalizer (alone), NFC, NFD, NFKC, NFKD, Lowercase, Strip, Replace, "
    "Prepend, Precompiled, Sequence";

absl::StatusOr<std::unique_ptr<ChainableNormalizer>> ParseChainable(
    const Json& stage, absl::string_view where);

absl::StatusOr<std::unique_ptr<ChainableNormalizer>> ParseNormalizerSequence(
    const Json& stage, absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(stage, {"type", "normalizers"}, where));
  const Json* list = Member(stage, "normalizers");
  if (list == nullptr || !list->is_array()) {
    return Invalid(where, "\"normalizers\" must be an array");
  }
  std::vector<std::unique_ptr<ChainableNormalizer>> stages;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(
        auto child,
        ParseChainable((*list)[i],
                       absl::StrCat(where, ".normalizers[", i, "]")));
    stages.push_back(std::move(child));
  }
  return std::unique_ptr<ChainableNormalizer>(
      std::make_unique<NormalizerSequence>(std::move(stages)));
}

// A stage's "pattern": {"String": "..."} (matched as it is) or
// {"Regex": "..."}; one that does not compile is refused with PCRE2's reason.
absl::StatusOr<std::unique_ptr<Regex>> ParsePattern(const Json& stage,
                                                    absl::string_view where) {
  ASSIGN_OR_RETURN(const Json* pattern, GetObject(stage, "pattern", where));
  if (pattern == nullptr || pattern->size() != 1 ||
      (Member(*pattern, "String") == nullptr &&
       Member(*pattern, "Regex") == nullptr)) {
    return Invalid(where,
                   "\"pattern\" must be {\"String\": ...} or {\"Regex\": ...}");
  }
  const bool literal = Member(*pattern, "String") != nullptr;
  ASSIGN_OR_RETURN(
      const std::string text,
      GetString(*pattern, literal ? "String" : "Regex", "", where));
  auto compiled = literal ? Regex::CompileLiteral(text, Regex::Options())
                          : Regex::Compile(text, Regex::Options());
  if (!compiled.ok()) return Invalid(where, compiled.status().message());
  return *std::move(compiled);
}

absl::StatusOr<std::unique_ptr<ChainableNormalizer>> ParseReplace(
    const Json& stage, absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(stage, {"type", "pattern", "content"}, where));
  ASSIGN_OR_RETURN(std::string content, GetString(stage, "content", "", where));
  RETURN_IF_ERROR(ValidateUtf8(content, where));
  ASSIGN_OR_RETURN(std::unique_ptr<Regex> pattern, ParsePattern(stage, where));
  return std::unique_ptr<ChainableNormalizer>(
      std::make_unique<ReplaceNormalizer>(std::move(pattern),
                                          std::move(content)));
}

absl::StatusOr<std::unique_ptr<ChainableNormalizer>> ParseChainable(
    const Json& stage, absl::string_view where) {
  ASSIGN_OR_RETURN(const std::string type, TypeOf(stage, where));
  const std::string at = absl::StrCat(where, " (", type, ")");
  using Form = UnicodeNormalizer::Form;
  for (const auto& [name, form] : {std::pair{"NFC", Form::kNfc},
                                   {"NFD", Form::kNfd},
                                   {"NFKC", Form::kNfkc},
                                   {"NFKD", Form::kNfkd}}) {
    if (type != name) continue;
    RETURN_IF_ERROR(CheckFields(stage, {"type"}, at));
    return std::unique_ptr<ChainableNormalizer>(
        std::make_unique<UnicodeNormalizer>(form));
  }
  if (type == "Lowercase") {
    RETURN_IF_ERROR(CheckFields(stage, {"type"}, at));
    return std::unique_ptr<ChainableNormalizer>(
        std::make_unique<LowercaseNormalizer>());
  }
  if (type == "Strip") {
    RETURN_IF_ERROR(
        CheckFields(stage, {"type", "strip_left", "strip_right"}, at));
    ASSIGN_OR_RETURN(const bool left, GetBool(stage, "strip_left", true, at));
    ASSIGN_OR_RETURN(const bool right, GetBool(stage, "strip_right", true, at));
    return std::unique_ptr<ChainableNormalizer>(
        std::make_unique<StripNormalizer>(left, right));
  }
  if (type == "Prepend") {
    RETURN_IF_ERROR(CheckFields(stage, {"type", "prepend"}, at));
    ASSIGN_OR_RETURN(std::string prefix, GetString(stage, "prepend", "", at));
    RETURN_IF_ERROR(ValidateUtf8(prefix, at));
    return std::unique_ptr<ChainableNormalizer>(
        std::make_unique<PrependNormalizer>(std::move(prefix)));
  }
  if (type == "Replace") return ParseReplace(stage, at);
  if (type == "Precompiled") {
    RETURN_IF_ERROR(CheckFields(stage, {"type", "precompiled_charsmap"}, at));
    ASSIGN_OR_RETURN(const std::string charsmap,
                     GetString(stage, "precompiled_charsmap", "", at));
    auto normalizer = PrecompiledNormalizer::FromBase64(charsmap);
    if (!normalizer.ok()) return Invalid(at, normalizer.status().message());
    return std::unique_ptr<ChainableNormalizer>(*std::move(normalizer));
  }
  if (type == "Sequence") return ParseNormalizerSequence(stage, at);
  return Unsupported(where, type, kChainableNormalizers);
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseBertNormalizer(
    const Json& stage, absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(stage,
                              {"type", "clean_text", "handle_chinese_chars",
                               "strip_accents", "lowercase"},
                              where));
  BertNormalizer::Options options;
  ASSIGN_OR_RETURN(options.clean_text,
                   GetBool(stage, "clean_text", true, where));
  ASSIGN_OR_RETURN(options.handle_chinese_chars,
                   GetBool(stage, "handle_chinese_chars", true, where));
  ASSIGN_OR_RETURN(options.lowercase, GetBool(stage, "lowercase", true, where));
  if (Member(stage, "strip_accents") != nullptr) {
    ASSIGN_OR_RETURN(options.strip_accents,
                     GetBool(stage, "strip_accents", false, where));
  }
  return std::unique_ptr<Normalizer>(std::make_unique<BertNormalizer>(options));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(
    const Json& root, absl::string_view what) {
  const std::string where = absl::StrCat(what, ": normalizer");
  const Json* stage = Member(root, "normalizer");
  if (stage == nullptr) return std::unique_ptr<Normalizer>();
  ASSIGN_OR_RETURN(const std::string type, TypeOf(*stage, where));
  if (type == "BertNormalizer") return ParseBertNormalizer(*stage, where);
  ASSIGN_OR_RETURN(auto chainable, ParseChainable(*stage, where));
  return std::unique_ptr<Normalizer>(std::move(chainable));
}

namespace {

constexpr absl::string_view kPreTokenizers =
    "BertPreTokenizer, ByteLevel, Metaspace, Split, Sequence";

struct PreTokenizerStage {
  std::unique_ptr<PreTokenizer> stage;
  bool byte_level = false;
  bool rewrites = false;  // Rewrite may change the text
};

absl::StatusOr<PreTokenizerStage> ParsePreTokenizerStage(
    const Json& stage, absl::string_view where);

absl::StatusOr<PreTokenizerStage> ParseByteLevel(const Json& stage,
                                                 absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(
      stage, {"type", "add_prefix_space", "trim_offsets", "use_regex"}, where));
  ByteLevelPreTokenizer::Options options;
  ASSIGN_OR_RETURN(options.add_prefix_space,
                   GetBool(stage, "add_prefix_space", true, where));
  ASSIGN_OR_RETURN(options.use_regex, GetBool(stage, "use_regex", true, where));
  PreTokenizerStage parsed;
  parsed.stage = std::make_unique<ByteLevelPreTokenizer>(options);
  parsed.byte_level = true;
  parsed.rewrites = options.add_prefix_space;
  return parsed;
}

absl::StatusOr<MetaspacePreTokenizer::PrependScheme> ParsePrependScheme(
    const Json& stage, absl::string_view where) {
  using Scheme = MetaspacePreTokenizer::PrependScheme;
  ASSIGN_OR_RETURN(const std::string scheme,
                   GetString(stage, "prepend_scheme", "always", where));
  ASSIGN_OR_RETURN(const bool add_prefix_space,
                   GetBool(stage, "add_prefix_space", true, where));
  Scheme parsed;
  if (scheme == "always") {
    parsed = Scheme::kAlways;
  } else if (scheme == "first") {
    parsed = Scheme::kFirst;
  } else if (scheme == "never") {
    parsed = Scheme::kNever;
  } else {
    return Invalid(where, absl::StrCat("prepend_scheme ", Quote(scheme),
                                       " is not one of always, first, never"));
  }
  // The crate's reading of the older field.
  if (!add_prefix_space) {
    if (parsed != Scheme::kNever &&
        Member(stage, "prepend_scheme") != nullptr) {
      return Invalid(where, "add_prefix_space does not match prepend_scheme");
    }
    parsed = Scheme::kNever;
  }
  return parsed;
}

absl::StatusOr<PreTokenizerStage> ParseMetaspace(const Json& stage,
                                                 absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(stage,
                              {"type", "replacement", "prepend_scheme", "split",
                               "add_prefix_space", "str_rep"},
                              where));
  MetaspacePreTokenizer::Options options;
  ASSIGN_OR_RETURN(const std::string replacement,
                   GetString(stage, "replacement", "\u2581", where));
  RETURN_IF_ERROR(ValidateUtf8(replacement, where));
  size_t pos = 0;
  if (replacement.empty() || (options.replacement = NextChar(replacement, &pos),
                              pos) != replacement.size()) {
    return Invalid(where, "\"replacement\" must be one character");
  }
  ASSIGN_OR_RETURN(options.prepend_scheme, ParsePrependScheme(stage, where));
  ASSIGN_OR_RETURN(options.split, GetBool(stage, "split", true, where));
  PreTokenizerStage parsed;
  parsed.stage = std::make_unique<MetaspacePreTokenizer>(options);
  parsed.rewrites = true;
  return parsed;
}

// Split's "behavior" and "invert" are required, as the crate reads them.
absl::StatusOr<PreTokenizerStage> ParseSplit(const Json& stage,
                                             absl::string_view where) {
  RETURN_IF_ERROR(
      CheckFields(stage, {"type", "pattern", "behavior", "invert"}, where));
  if (Member(stage, "behavior") == nullptr ||
      Member(stage, "invert") == nullptr) {
    return Invalid(where, "\"behavior\" and \"invert\" are required");
  }
  ASSIGN_OR_RETURN(const std::string behavior,
                   GetString(stage, "behavior", "", where));
  ASSIGN_OR_RETURN(const bool invert, GetBool(stage, "invert", false, where));
  static constexpr std::pair<absl::string_view, SplitBehavior> kBehaviors[] = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous}};
  const auto* found =
      std::find_if(std::begin(kBehaviors), std::end(kBehaviors),
                   [&](const auto& known) { return known.first == behavior; });
  if (found == std::end(kBehaviors)) {
    return Invalid(where, absl::StrCat("behavior ", Quote(behavior),
                                       " is not one of Removed, Isolated, "
                                       "MergedWithPrevious, MergedWithNext, "
                                       "Contiguous"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Regex> pattern, ParsePattern(stage, where));
  PreTokenizerStage parsed;
  parsed.stage = std::make_unique<SplitPreTokenizer>(std::move(pattern),
                                                     found->second, invert);
  return parsed;
}

absl::StatusOr<PreTokenizerStage> ParsePreTokenizerSequence(
    const Json& stage, absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(stage, {"type", "pretokenizers"}, where));
  const Json* list = Member(stage, "pretokenizers");
  if (list == nullptr || !list->is_array()) {
    return Invalid(where, "\"pretokenizers\" must be an array");
  }
  PreTokenizerStage parsed;
  std::vector<std::unique_ptr<PreTokenizer>> stages;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string at = absl::StrCat(where, ".pretokenizers[", i, "]");
    ASSIGN_OR_RETURN(PreTokenizerStage child,
                     ParsePreTokenizerStage((*list)[i], at));
    if (child.rewrites && i > 0) {
      return Invalid(at,
                     "a pre-tokenizer that changes the text (Metaspace, "
                     "ByteLevel with add_prefix_space) is supported only "
                     "first in a Sequence");
    }
    parsed.byte_level = parsed.byte_level || child.byte_level;
    parsed.rewrites = parsed.rewrites || child.rewrites;
    stages.push_back(std::move(child.stage));
  }
  parsed.stage = std::make_unique<PreTokenizerSequence>(std::move(stages));
  return parsed;
}

absl::StatusOr<PreTokenizerStage> ParsePreTokenizerStage(
    const Json& stage, absl::string_view where) {
  ASSIGN_OR_RETURN(const std::string type, TypeOf(stage, where));
  const std::string at = absl::StrCat(where, " (", type, ")");
  if (type == "BertPreTokenizer") {
    RETURN_IF_ERROR(CheckFields(stage, {"type"}, at));
    PreTokenizerStage parsed;
    parsed.stage = std::make_unique<BertPreTokenizer>();
    return parsed;
  }
  if (type == "ByteLevel") return ParseByteLevel(stage, at);
  if (type == "Metaspace") return ParseMetaspace(stage, at);
  if (type == "Split") return ParseSplit(stage, at);
  if (type == "Sequence") return ParsePreTokenizerSequence(stage, at);
  return Unsupported(where, type, kPreTokenizers);
}

}  // namespace

absl::StatusOr<ParsedPreTokenizer> ParsePreTokenizer(const Json& root,
                                                     absl::string_view what) {
  ParsedPreTokenizer parsed;
  const Json* stage = Member(root, "pre_tokenizer");
  if (stage == nullptr) return parsed;
  ASSIGN_OR_RETURN(
      PreTokenizerStage child,
      ParsePreTokenizerStage(*stage, absl::StrCat(what, ": pre_tokenizer")));
  parsed.stage = std::move(child.stage);
  parsed.byte_level = child.byte_level;
  return parsed;
}

}  // namespace favor::tokenizer::tokenizer_json
