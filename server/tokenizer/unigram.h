// Unigram (Hugging Face's models/unigram, SentencePiece's unigram model as
// tokenizer.json writes it): the segmentation of a word into pieces with
// the highest total score (Viterbi over a byte trie of the pieces, as the
// crate's encode_optimized). A character no piece starts with is an
// unknown node scored min_score - 10; consecutive unknown nodes are fused
// into one token, which becomes its <0xXX> byte pieces (all with the fused
// span) with byte_fallback, else unk_id.
//
// Cost: a word of n bytes takes O(n × L) trie steps, L the longest piece in
// bytes: linear in the text.
#ifndef FAVOR_SERVER_TOKENIZER_UNIGRAM_H_
#define FAVOR_SERVER_TOKENIZER_UNIGRAM_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "server/tokenizer/model.h"

namespace favor::tokenizer {

class Unigram final : public Model {
 public:
  struct Piece {
    std::string piece;
    double score = 0;
  };
  struct Options {
    int64_t unk_id = -1;  // required: the crate fails an encode without one
    bool byte_fallback = false;
  };

  // pieces[id]; INVALID_ARGUMENT when empty, an empty piece, or no unk_id.
  // A piece given twice is found under its last id, as the crate does.
  static absl::StatusOr<std::unique_ptr<Unigram>> Create(
      std::vector<Piece> pieces, const Options& options);

  void Tokenize(absl::string_view word,
                std::vector<ModelToken>* tokens) const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  size_t vocab_size() const override { return pieces_.size(); }

 private:
  struct Node;
  Unigram(std::vector<Piece> pieces, const Options& options);
  // Viterbi: best[i] is the best segmentation of word[0, i).
  void BestPath(absl::string_view word, std::vector<Node>* best) const;
  // Appends the token(s) of word[begin, end) (one Viterbi node or a fused
  // unknown run).
  void Emit(absl::string_view word, uint32_t begin, uint32_t end,
            std::vector<ModelToken>* tokens) const;

  std::vector<Piece> pieces_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  // Byte trie of the pieces: child of (node << 8 | byte); piece_of_node_ is
  // the id a node ends, or -1.
  absl::flat_hash_map<uint64_t, uint32_t> children_;
  std::vector<int32_t> piece_of_node_ = {-1};
  std::array<int32_t, 256> byte_fallback_ids_;
  double unk_score_ = 0;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_UNIGRAM_H_
