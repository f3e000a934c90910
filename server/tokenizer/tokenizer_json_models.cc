// tokenizer.json's model: WordPiece, BPE or Unigram.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/common/json_parse.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/bpe.h"
#include "server/tokenizer/tokenizer_json_stages.h"
#include "server/tokenizer/unigram.h"
#include "server/tokenizer/unicode.h"
#include "server/tokenizer/wordpiece.h"

namespace favor::tokenizer::tokenizer_json {
namespace {

// model.vocab: {piece: id}. With `dense`, the ids are exactly 0..n-1;
// otherwise ids may leave gaps (an empty piece stands in) up to twice the
// entries, so that a hostile id cannot make a huge table.
absl::StatusOr<std::vector<std::string>> ParseVocab(const Json& model,
                                                    absl::string_view what,
                                                    bool dense) {
  const std::string where = absl::StrCat(what, ": model.vocab");
  ASSIGN_OR_RETURN(const Json* vocab, GetObject(model, "vocab", where));
  if (vocab == nullptr || vocab->empty()) return Invalid(where, "is missing");
  const auto size = static_cast<int64_t>(vocab->size());
  const int64_t top = dense ? size - 1 : 2 * size;
  std::vector<std::string> pieces(dense ? vocab->size() : 0);
  std::vector<bool> seen(pieces.size(), false);
  for (const auto& [piece, id_json] : vocab->items()) {
    const std::string entry = absl::StrCat(where, "[", Quote(piece), "]");
    ASSIGN_OR_RETURN(const int64_t id, GetInt(id_json, 0, top, entry));
    RETURN_IF_ERROR(ValidateUtf8(piece, entry));
    if (static_cast<size_t>(id) >= pieces.size()) {
      pieces.resize(id + 1);
      seen.resize(id + 1, false);
    }
    if (seen[id]) {
      return Invalid(entry, absl::StrCat("id ", id,
                                         " is used twice (each id must be "
                                         "given once)"));
    }
    seen[id] = true;
    pieces[id] = piece;
  }
  return pieces;
}

absl::StatusOr<std::unique_ptr<Model>> ParseWordPiece(const Json& model,
                                                      absl::string_view what,
                                                      absl::string_view where) {
  RETURN_IF_ERROR(CheckFields(model,
                              {"type", "unk_token", "continuing_subword_prefix",
                               "max_input_chars_per_word", "vocab"},
                              where));
  WordPiece::Options options;
  ASSIGN_OR_RETURN(options.unk_token,
                   GetString(model, "unk_token", options.unk_token, where));
  ASSIGN_OR_RETURN(options.continuing_subword_prefix,
                   GetString(model, "continuing_subword_prefix",
                             options.continuing_subword_prefix, where));
  if (const Json* max_chars = Member(model, "max_input_chars_per_word")) {
    ASSIGN_OR_RETURN(options.max_input_chars_per_word,
                     GetInt(*max_chars, 1, WordPiece::kMaxInputCharsLimit,
                            absl::StrCat(where, ".max_input_chars_per_word")));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> pieces,
                   ParseVocab(model, what, /*dense=*/true));
  auto wordpiece = WordPiece::Create(std::move(pieces), options);
  if (!wordpiece.ok()) return Invalid(what, wordpiece.status().message());
  return std::unique_ptr<Model>(*std::move(wordpiece));
}

// model.merges: ["a b", ...] (the older spelling) or [["a", "b"], ...].
absl::StatusOr<std::vector<Bpe::Merge>> ParseMerges(const Json& model,
                                                    absl::string_view where) {
  const std::string at = absl::StrCat(where, ".merges");
  const Json* merges = Member(model, "merges");
  if (merges == nullptr) return std::vector<Bpe::Merge>();
  if (!merges->is_array()) return Invalid(at, "must be an array");
  std::vector<Bpe::Merge> parsed;
  parsed.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const Json& merge = (*merges)[i];
    if (merge.is_string()) {
      const std::vector<std::string> parts =
          absl::StrSplit(merge.get<std::string>(), ' ');
      if (parts.size() == 2) {
        parsed.emplace_back(parts[0], parts[1]);
        continue;
      }
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      parsed.emplace_back(merge[0].get<std::string>(),
                          merge[1].get<std::string>());
      continue;
    }
    return Invalid(absl::StrCat(at, "[", i, "]"),
                   absl::StrCat("must be \"a b\" or [\"a\", \"b\"], got ",
                                DescribeJson(merge)));
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<Model>> ParseBpe(const Json& model,
                                                absl::string_view what,
                                                absl::string_view where,
                                                bool byte_level) {
  RETURN_IF_ERROR(CheckFields(
      model,
      {"type", "dropout", "unk_token", "continuing_subword_prefix",
       "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
       "vocab", "merges"},
      where));
  if (const Json* dropout = Member(model, "dropout");
      dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0)) {
    return Invalid(where, absl::StrCat("\"dropout\" ", DescribeJson(*dropout),
                                       " is not supported (only null or 0: "
                                       "Favor's ids are deterministic)"));
  }
  Bpe::Options options;
  options.byte_level = byte_level;
  if (Member(model, "unk_token") != nullptr) {
    ASSIGN_OR_RETURN(options.unk_token, GetString(model, "unk_token", "", where));
  }
  ASSIGN_OR_RETURN(options.continuing_subword_prefix,
                   GetString(model, "continuing_subword_prefix", "", where));
  ASSIGN_OR_RETURN(options.end_of_word_suffix,
                   GetString(model, "end_of_word_suffix", "", where));
  ASSIGN_OR_RETURN(options.fuse_unk, GetBool(model, "fuse_unk", false, where));
  ASSIGN_OR_RETURN(options.byte_fallback,
                   GetBool(model, "byte_fallback", false, where));
  ASSIGN_OR_RETURN(options.ignore_merges,
                   GetBool(model, "ignore_merges", false, where));
  ASSIGN_OR_RETURN(std::vector<std::string> pieces,
                   ParseVocab(model, what, /*dense=*/false));
  ASSIGN_OR_RETURN(const std::vector<Bpe::Merge> merges,
                   ParseMerges(model, where));
  auto bpe = Bpe::Create(std::move(pieces), merges, options);
  if (!bpe.ok()) return Invalid(where, bpe.status().message());
  return std::unique_ptr<Model>(*std::move(bpe));
}

// model.vocab: [[piece, score], ...], the index the id.
absl::StatusOr<std::vector<Unigram::Piece>> ParseScoredVocab(
    const Json& model, absl::string_view where) {
  const std::string at = absl::StrCat(where, ".vocab");
  const Json* vocab = Member(model, "vocab");
  if (vocab == nullptr || !vocab->is_array() || vocab->empty()) {
    return Invalid(at, "must be a non-empty array of [piece, score]");
  }
  std::vector<Unigram::Piece> pieces;
  pieces.reserve(vocab->size());
  for (size_t i = 0; i < vocab->size(); ++i) {
    const Json& entry = (*vocab)[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() ||
        !entry[1].is_number()) {
      return Invalid(absl::StrCat(at, "[", i, "]"),
                     absl::StrCat("must be [piece, score], got ",
                                  DescribeJson(entry)));
    }
    Unigram::Piece piece{entry[0].get<std::string>(), entry[1].get<double>()};
    RETURN_IF_ERROR(ValidateUtf8(piece.piece, absl::StrCat(at, "[", i, "]")));
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

absl::StatusOr<std::unique_ptr<Model>> ParseUnigram(const Json& model,
                                                    absl::string_view where) {
  RETURN_IF_ERROR(
      CheckFields(model, {"type", "unk_id", "vocab", "byte_fallback"}, where));
  Unigram::Options options;
  ASSIGN_OR_RETURN(options.byte_fallback,
                   GetBool(model, "byte_fallback", false, where));
  ASSIGN_OR_RETURN(std::vector<Unigram::Piece> pieces,
                   ParseScoredVocab(model, where));
  if (const Json* unk = Member(model, "unk_id")) {
    ASSIGN_OR_RETURN(options.unk_id,
                     GetInt(*unk, 0, static_cast<int64_t>(pieces.size()) - 1,
                            absl::StrCat(where, ".unk_id")));
  }
  auto unigram = Unigram::Create(std::move(pieces), options);
  if (!unigram.ok()) return Invalid(where, unigram.status().message());
  return std::unique_ptr<Model>(*std::move(unigram));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> ParseModel(const Json& root,
                                                  absl::string_view what,
                                                  bool byte_level,
                                                  std::string* kind) {
  const std::string where = absl::StrCat(what, ": model");
  ASSIGN_OR_RETURN(const Json* model, GetObject(root, "model", what));
  if (model == nullptr) return Invalid(where, "is missing");
  ASSIGN_OR_RETURN(const std::string type, TypeOf(*model, where));
  const std::string at = absl::StrCat(where, " (", type, ")");
  if (byte_level && type != "BPE") {
    return Invalid(at, "a ByteLevel pre-tokenizer is supported only before a "
                       "BPE model");
  }
  if (type == "WordPiece") {
    *kind = "wordpiece";
    return ParseWordPiece(*model, what, at);
  }
  if (type == "BPE") {
    *kind = "bpe";
    return ParseBpe(*model, what, at, byte_level);
  }
  if (type == "Unigram") {
    *kind = "unigram";
    return ParseUnigram(*model, at);
  }
  return Unsupported(where, type,
                     "WordPiece, BPE, Unigram; SentencePiece models also load "
                     "from their .model file");
}

}  // namespace favor::tokenizer::tokenizer_json
