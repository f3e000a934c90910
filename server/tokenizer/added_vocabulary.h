// Hugging Face's added tokens: strings ("[CLS]", "[MASK]", ...) that are
// found in the input text before any other stage runs and become one token
// each, whatever the normalizer and the model would make of them. The rest of
// the text is tokenised in segments between them.
//
// Matching is Hugging Face's: leftmost, then longest, on the raw input bytes
// ("normalized": false). lstrip / rstrip widen a match over the whitespace
// before / after it. Tokens with "normalized": true or "single_word": true
// are refused at load time rather than matched differently from Hugging Face.
//
// Cost: a byte trie of the contents; at each input byte the walk is at most
// as long as the longest content, so the scan is linear in the text.
#ifndef FAVOR_SERVER_TOKENIZER_ADDED_VOCABULARY_H_
#define FAVOR_SERVER_TOKENIZER_ADDED_VOCABULARY_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/pre_tokenizer.h"

namespace favor::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
};

class AddedVocabulary {
 public:
  // A piece of the input: either one added token or text between them.
  struct Segment {
    ByteRange range;
    int32_t added_id = -1;  // -1: plain text
  };

  // No added tokens: Split returns the whole text.
  AddedVocabulary() = default;
  // INVALID_ARGUMENT for an empty content or a content or id given twice.
  static absl::StatusOr<AddedVocabulary> Create(std::vector<AddedToken> tokens);

  // Splits `text` into segments in order; plain segments are non-empty.
  void Split(absl::string_view text, std::vector<Segment>* segments) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  // Added token `id`, or nullptr.
  const AddedToken* Find(int32_t id) const;

 private:
  // The longest token matching at `pos`, or nullptr.
  const AddedToken* LongestAt(absl::string_view text, size_t pos) const;
  void Insert(size_t index);

  std::vector<AddedToken> tokens_;
  absl::flat_hash_map<int32_t, size_t> index_of_id_;
  // A byte trie of the contents: node 0 is the root; a child is found under
  // (parent << 8 | byte). terminal_[node] is an index into tokens_, or -1.
  absl::flat_hash_map<uint64_t, uint32_t> children_;
  std::vector<int64_t> terminal_ = {-1};
  std::array<bool, 256> starts_token_ = {};
};

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_ADDED_VOCABULARY_H_
