// BPE (Hugging Face's models/bpe): a word starts as its characters (or, for
// byte-level vocabularies, its bytes spelled in GPT-2's alphabet), and the
// adjacent pair with the lowest merge rank is merged until none is left,
// the leftmost first among equal ranks. Characters the vocabulary lacks
// become their <0xXX> byte pieces (byte_fallback) or the unknown token
// (consecutive ones fused into one with fuse_unk), or are dropped when the
// model has no unknown token, all as the crate does.
//
// Cost: a word of n symbols takes O(n log n) (a binary heap of candidate
// merges, stale entries skipped as the crate's Word::merge_all does), so
// tokenising is linear in the text up to that log factor, whatever its
// words. No cache: nothing grows with the texts seen.
#ifndef FAVOR_SERVER_TOKENIZER_BPE_H_
#define FAVOR_SERVER_TOKENIZER_BPE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "server/tokenizer/model.h"

namespace favor::tokenizer {

class Bpe final : public Model {
 public:
  // The fields of tokenizer.json's "BPE" model.
  struct Options {
    std::optional<std::string> unk_token;
    std::string continuing_subword_prefix;  // empty: none
    std::string end_of_word_suffix;         // empty: none
    bool fuse_unk = false;
    bool byte_fallback = false;
    // A word that is itself a piece is that piece, unmerged.
    bool ignore_merges = false;
    // Words are read as bytes in GPT-2's alphabet (byte_level_alphabet.h):
    // set with the ByteLevel pre-tokenizer, which in Hugging Face's crate
    // rewrites the text into that alphabet before the model sees it.
    bool byte_level = false;
  };
  using Merge = std::pair<std::string, std::string>;

  // `pieces[id]` is the piece of id (empty for an id no piece has).
  // INVALID_ARGUMENT when a piece repeats, a merge names a piece the
  // vocabulary lacks or makes one it lacks, or unk_token is not a piece. A
  // merge listed twice keeps its later rank, as the crate's map does.
  static absl::StatusOr<std::unique_ptr<Bpe>> Create(
      std::vector<std::string> pieces, const std::vector<Merge>& merges,
      const Options& options);

  void Tokenize(absl::string_view word,
                std::vector<ModelToken>* tokens) const override;
  absl::string_view IdToToken(int32_t id) const override;
  std::optional<int32_t> TokenToId(absl::string_view token) const override;
  size_t vocab_size() const override { return pieces_.size(); }

 private:
  struct Symbol;
  struct MergeResult {
    uint32_t rank;
    int32_t id;
  };

  Bpe(std::vector<std::string> pieces, const Options& options);
  absl::Status AddMerges(const std::vector<Merge>& merges);
  // The word's first symbols (MergeWord's loop in the crate).
  void InitialSymbols(absl::string_view word, std::vector<Symbol>* out) const;
  // The id of one character (or byte) of the word, with the prefix and
  // suffix its position calls for.
  std::optional<int32_t> UnitId(absl::string_view unit, bool first,
                                bool last) const;
  void MergeAll(std::vector<Symbol>* symbols) const;
  const MergeResult* FindMerge(int32_t left, int32_t right) const;

  const Options options_;
  std::vector<std::string> pieces_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  // (left id << 32 | right id) → the merge's rank and the merged piece.
  absl::flat_hash_map<uint64_t, MergeResult> merges_;
  // Byte-level vocabularies: each byte's character, UTF-8.
  std::array<std::string, 256> byte_chars_;
  std::array<int32_t, 256> byte_fallback_ids_;  // <0xXX>, or -1
  int32_t unk_id_ = -1;
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_BPE_H_
