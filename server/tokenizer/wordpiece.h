// WordPiece (BERT's model, Hugging Face's models/wordpiece): greedy longest
// match from the start of the word, later pieces looked up with the
// continuing-subword prefix ("##"). A word with more than
// max_input_chars_per_word characters, or with a remainder no piece starts,
// becomes the single unknown token covering the whole word.
//
// Cost: a word of n bytes costs at most n × L lookups, L the longest piece
// in bytes (the search never tries a substring longer than any piece), and a
// word over the character limit costs one scan; so tokenising is linear in
// the text whatever its words. Lookups hash string_views into the word; no
// string is built per lookup.
#ifndef FAVOR_SERVER_TOKENIZER_WORDPIECE_H_
#define FAVOR_SERVER_TOKENIZER_WORDPIECE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "server/tokenizer/model.h"

namespace favor::tokenizer {

class WordPiece final : public Model {
 public:
  struct Options {
    std::string unk_token = "[UNK]";
    std::string continuing_subword_prefix = "##";
    // Hugging Face's default and BERT's.
    int max_input_chars_per_word = 100;
  };
  // Longest accepted max_input_chars_per_word (a sanity bound on files).
  static constexpr int kMaxInputCharsLimit = 1 << 20;

  // `pieces[id]` is the piece of id; pieces must be distinct except that a
  // repeated piece keeps its last id for lookups (as Hugging Face reads a
  // vocab.txt). INVALID_ARGUMENT when unk_token is not a piece, the vocabulary
  // is empty or larger than INT32_MAX, or max_input_chars_per_word is out of
  // [1, kMaxInputCharsLimit].
  static absl::StatusOr<std::unique_ptr<WordPiece>> Create(
      std::vector<std::string> pieces, const Options& options);

  void Tokenize(absl::string_view word,
                std::vector<ModelToken>* tokens) const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  size_t vocab_size() const override { return pieces_.size(); }

 private:
  using PieceMap = absl::flat_hash_map<std::string, int32_t>;

  WordPiece(std::vector<std::string> pieces, const Options& options);
  // Greedy longest match; false when some remainder has no piece.
  bool SplitWord(absl::string_view word, std::vector<ModelToken>* tokens) const;
  // The longest piece of `map` that starts `rest`, as (id, byte length).
  std::optional<std::pair<int32_t, size_t>> LongestPrefix(
      const PieceMap& map, size_t longest_key, absl::string_view rest) const;

  const Options options_;
  std::vector<std::string> pieces_;
  // Every piece, for the first piece of a word.
  PieceMap word_start_;
  size_t longest_word_start_ = 0;
  // Pieces that begin with the prefix, keyed without it, for later pieces.
  PieceMap continuation_;
  size_t longest_continuation_ = 0;
  int32_t unk_id_ = 0;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_WORDPIECE_H_
