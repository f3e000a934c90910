#include "server/tokenizer/wordpiece.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

absl::StatusOr<std::unique_ptr<WordPiece>> WordPiece::Create(
    std::vector<std::string> pieces, const Options& options) {
  if (pieces.empty()) {
    return absl::InvalidArgumentError("WordPiece: the vocabulary is empty");
  }
  if (pieces.size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("WordPiece: ", pieces.size(),
                     " pieces, more than ids can number (2^31 - 1)"));
  }
  if (options.max_input_chars_per_word < 1 ||
      options.max_input_chars_per_word > kMaxInputCharsLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("WordPiece: max_input_chars_per_word ",
                     options.max_input_chars_per_word, " is outside [1, ",
                     kMaxInputCharsLimit, "]"));
  }
  auto model = absl::WrapUnique(new WordPiece(std::move(pieces), options));
  const auto unk = model->word_start_.find(options.unk_token);
  if (unk == model->word_start_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("WordPiece: unk_token \"", options.unk_token,
                     "\" is not in the vocabulary"));
  }
  model->unk_id_ = unk->second;
  return model;
}

WordPiece::WordPiece(std::vector<std::string> pieces, const Options& options)
    : options_(options), pieces_(std::move(pieces)) {
  const absl::string_view prefix = options_.continuing_subword_prefix;
  word_start_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const std::string& piece = pieces_[id];
    word_start_[piece] = static_cast<int32_t>(id);
    longest_word_start_ = std::max(longest_word_start_, piece.size());
    if (!prefix.empty() && absl::StartsWith(piece, prefix) &&
        piece.size() > prefix.size()) {
      continuation_[piece.substr(prefix.size())] = static_cast<int32_t>(id);
      longest_continuation_ =
          std::max(longest_continuation_, piece.size() - prefix.size());
    }
  }
}

void WordPiece::Tokenize(absl::string_view word,
                         std::vector<ModelToken>* tokens) const {
  // Count characters only up to the limit: a 10 MB "word" costs one scan.
  size_t chars = 0;
  const auto limit = static_cast<size_t>(options_.max_input_chars_per_word);
  for (size_t i = 0; i < word.size() && chars <= limit; ++i) {
    if (!IsContinuationByte(word[i])) ++chars;
  }
  const size_t first = tokens->size();
  if (chars <= limit && SplitWord(word, tokens)) return;
  tokens->resize(first);
  tokens->push_back({unk_id_, 0, static_cast<uint32_t>(word.size())});
}

bool WordPiece::SplitWord(absl::string_view word,
                          std::vector<ModelToken>* tokens) const {
  size_t start = 0;
  while (start < word.size()) {
    // With an empty prefix, later pieces are looked up as first ones.
    const bool whole = start == 0 || options_.continuing_subword_prefix.empty();
    const auto match =
        LongestPrefix(whole ? word_start_ : continuation_,
                      whole ? longest_word_start_ : longest_continuation_,
                      word.substr(start));
    if (!match) return false;
    tokens->push_back({match->first, static_cast<uint32_t>(start),
                       static_cast<uint32_t>(start + match->second)});
    start += match->second;
  }
  return true;
}

std::optional<std::pair<int32_t, size_t>> WordPiece::LongestPrefix(
    const PieceMap& map, size_t longest_key, absl::string_view rest) const {
  size_t end = std::min(rest.size(), longest_key);
  // Never cut a character: step back to the start of a character.
  while (end > 0 && end < rest.size() && IsContinuationByte(rest[end])) --end;
  while (end > 0) {
    const auto found = map.find(rest.substr(0, end));
    if (found != map.end()) return std::make_pair(found->second, end);
    do {
      --end;
    } while (end > 0 && IsContinuationByte(rest[end]));
  }
  return std::nullopt;
}

absl::string_view WordPiece::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
  return pieces_[static_cast<size_t>(id)];
}

std::optional<int32_t> WordPiece::TokenToId(absl::string_view token) const {
  const auto found = word_start_.find(token);
  if (found == word_start_.end()) return std::nullopt;
  return found->second;
}

}  // namespace favor::tokenizer
