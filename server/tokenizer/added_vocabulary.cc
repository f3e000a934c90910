#include "server/tokenizer/added_vocabulary.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

// The byte offset of the whitespace run ending at `pos`, not before `floor`.
size_t WhitespaceBefore(absl::string_view text, size_t floor, size_t pos) {
  while (pos > floor) {
    size_t start = pos - 1;
    while (start > floor && IsContinuationByte(text[start])) --start;
    size_t cursor = start;
    if (!IsWhitespace(NextChar(text, &cursor))) break;
    pos = start;
  }
  return pos;
}

// The byte offset just past the whitespace run starting at `pos`.
size_t WhitespaceAfter(absl::string_view text, size_t pos) {
  while (pos < text.size()) {
    size_t cursor = pos;
    if (!IsWhitespace(NextChar(text, &cursor))) break;
    pos = cursor;
  }
  return pos;
}

}  // namespace

absl::StatusOr<AddedVocabulary> AddedVocabulary::Create(
    std::vector<AddedToken> tokens) {
  AddedVocabulary vocabulary;
  vocabulary.tokens_ = std::move(tokens);
  absl::flat_hash_set<absl::string_view> contents;
  for (size_t i = 0; i < vocabulary.tokens_.size(); ++i) {
    const AddedToken& token = vocabulary.tokens_[i];
    if (token.content.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("added token ", token.id, " has empty content"));
    }
    if (!contents.insert(token.content).second ||
        !vocabulary.index_of_id_.emplace(token.id, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("added token ", token.id, " (\"", token.content,
                       "\") repeats an earlier content or id"));
    }
    vocabulary.Insert(i);
  }
  return vocabulary;
}

void AddedVocabulary::Insert(size_t index) {
  const std::string& content = tokens_[index].content;
  starts_token_[static_cast<unsigned char>(content[0])] = true;
  uint32_t node = 0;
  for (const char byte : content) {
    const uint64_t key =
        (uint64_t{node} << 8) | static_cast<unsigned char>(byte);
    const auto [child, inserted] =
        children_.try_emplace(key, static_cast<uint32_t>(terminal_.size()));
    if (inserted) terminal_.push_back(-1);
    node = child->second;
  }
  terminal_[node] = static_cast<int64_t>(index);
}

const AddedToken* AddedVocabulary::LongestAt(absl::string_view text,
                                             size_t pos) const {
  if (!starts_token_[static_cast<unsigned char>(text[pos])]) return nullptr;
  const AddedToken* longest = nullptr;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto child = children_.find((uint64_t{node} << 8) |
                                      static_cast<unsigned char>(text[i]));
    if (child == children_.end()) break;
    node = child->second;
    if (terminal_[node] >= 0) longest = &tokens_[terminal_[node]];
  }
  return longest;
}

void AddedVocabulary::Split(absl::string_view text,
                            std::vector<Segment>* segments) const {
  size_t plain_begin = 0;  // start of the text not yet in a segment
  size_t pos = tokens_.empty() ? text.size() : 0;
  while (pos < text.size()) {
    const AddedToken* token = LongestAt(text, pos);
    if (token == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos;
    size_t end = pos + token->content.size();
    if (token->lstrip) begin = WhitespaceBefore(text, plain_begin, begin);
    if (token->rstrip) end = WhitespaceAfter(text, end);
    if (begin > plain_begin) {
      segments->push_back(
          {{static_cast<uint32_t>(plain_begin), static_cast<uint32_t>(begin)}});
    }
    segments->push_back(
        {{static_cast<uint32_t>(begin), static_cast<uint32_t>(end)},
         token->id});
    pos = plain_begin = end;
  }
  if (plain_begin < text.size()) {
    segments->push_back({{static_cast<uint32_t>(plain_begin),
                          static_cast<uint32_t>(text.size())}});
  }
}

const AddedToken* AddedVocabulary::Find(int32_t id) const {
  const auto found = index_of_id_.find(id);
  return found == index_of_id_.end() ? nullptr : &tokens_[found->second];
}

}  // namespace favor::tokenizer
