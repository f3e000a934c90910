#include "server/tokenizer/bpe.h"

#include <queue>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/tokenizer/byte_level_alphabet.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

// One symbol of a word being merged: a piece and its bytes in the word. A
// symbol merged into its left neighbour keeps len 0.
struct Bpe::Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t len;
};

namespace {

uint64_t PairKey(int32_t left, int32_t right) {
  return (uint64_t{static_cast<uint32_t>(left)} << 32) |
         static_cast<uint32_t>(right);
}

// A candidate merge of the symbol at `pos` with the one after it.
struct Candidate {
  uint32_t rank;
  uint32_t pos;
  int32_t id;
};

// The heap's top is the lowest rank, then the leftmost position.
struct LaterCandidate {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Bpe>> Bpe::Create(
    std::vector<std::string> pieces, const std::vector<Merge>& merges,
    const Options& options) {
  if (options.byte_fallback &&
      (options.byte_level || !options.continuing_subword_prefix.empty() ||
       !options.end_of_word_suffix.empty())) {
    return absl::InvalidArgumentError(
        "BPE: byte_fallback with a byte-level alphabet, a "
        "continuing_subword_prefix or an end_of_word_suffix is not supported");
  }
  auto model = absl::WrapUnique(new Bpe(std::move(pieces), options));
  if (model->ids_.size() != model->pieces_.size() -
                                static_cast<size_t>(std::count(
                                    model->pieces_.begin(),
                                    model->pieces_.end(), std::string()))) {
    return absl::InvalidArgumentError("BPE: a piece is in the vocabulary twice");
  }
  if (options.unk_token) {
    const auto unk = model->ids_.find(*options.unk_token);
    if (unk == model->ids_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "BPE: unk_token \"", *options.unk_token, "\" is not in the vocabulary"));
    }
    model->unk_id_ = unk->second;
  }
  absl::Status merged = model->AddMerges(merges);
  if (!merged.ok()) return merged;
  return model;
}

Bpe::Bpe(std::vector<std::string> pieces, const Options& options)
    : options_(options), pieces_(std::move(pieces)) {
  ids_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    if (!pieces_[id].empty()) ids_.emplace(pieces_[id], static_cast<int32_t>(id));
  }
  const auto& alphabet = ByteLevelAlphabet();
  for (int byte = 0; byte < 256; ++byte) {
    char utf8[4];
    byte_chars_[byte].assign(utf8, EncodeUtf8(alphabet[byte], utf8));
    const auto fallback = ids_.find(absl::StrFormat("<0x%02X>", byte));
    byte_fallback_ids_[byte] = fallback == ids_.end() ? -1 : fallback->second;
  }
}

absl::Status Bpe::AddMerges(const std::vector<Merge>& merges) {
  const size_t prefix_length = options_.continuing_subword_prefix.size();
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_id = ids_.find(left);
    const auto right_id = ids_.find(right);
    const std::string merged =
        right.size() >= prefix_length
            ? absl::StrCat(left, absl::string_view(right).substr(prefix_length))
            : std::string();
    const auto merged_id = ids_.find(merged);
    if (left_id == ids_.end() || right_id == ids_.end() ||
        merged_id == ids_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("BPE: merge ", rank, " (\"", left, "\" \"", right,
                       "\") names or makes a piece the vocabulary lacks"));
    }
    merges_.insert_or_assign(
        PairKey(left_id->second, right_id->second),
        MergeResult{static_cast<uint32_t>(rank), merged_id->second});
  }
  return absl::OkStatus();
}

std::optional<int32_t> Bpe::UnitId(absl::string_view unit, bool first,
                                   bool last) const {
  const bool prefixed = !first && !options_.continuing_subword_prefix.empty();
  const bool suffixed = last && !options_.end_of_word_suffix.empty();
  auto found = ids_.end();
  if (!prefixed && !suffixed) {
    found = ids_.find(unit);
  } else {
    found = ids_.find(absl::StrCat(
        prefixed ? options_.continuing_subword_prefix : "", unit,
        suffixed ? options_.end_of_word_suffix : ""));
  }
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

void Bpe::InitialSymbols(absl::string_view word,
                         std::vector<Symbol>* out) const {
  std::optional<Symbol> unk;  // pending unknown run (fuse_unk)
  const auto add = [out](int32_t id, uint32_t len) {
    const auto index = static_cast<int32_t>(out->size());
    if (!out->empty()) out->back().next = index;
    out->push_back({id, index - 1, -1, len});
  };
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    absl::string_view unit;
    if (options_.byte_level) {
      unit = byte_chars_[static_cast<unsigned char>(word[pos++])];
    } else {
      NextChar(word, &pos);
      unit = word.substr(begin, pos - begin);
    }
    const auto length = static_cast<uint32_t>(pos - begin);
    if (const auto id = UnitId(unit, begin == 0, pos == word.size())) {
      if (unk) add(unk->id, unk->len);
      unk.reset();
      add(*id, length);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (const char byte : unit) {
        all = all && byte_fallback_ids_[static_cast<unsigned char>(byte)] >= 0;
      }
      if (all) {
        for (const char byte : unit) {
          add(byte_fallback_ids_[static_cast<unsigned char>(byte)], 1);
        }
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no unknown token: the crate drops it
    if (unk && options_.fuse_unk) {
      unk->len += length;
      continue;
    }
    if (unk) add(unk->id, unk->len);
    unk = Symbol{unk_id_, 0, 0, length};
  }
  if (unk) add(unk->id, unk->len);
}

const Bpe::MergeResult* Bpe::FindMerge(int32_t left, int32_t right) const {
  const auto found = merges_.find(PairKey(left, right));
  return found == merges_.end() ? nullptr : &found->second;
}

void Bpe::MergeAll(std::vector<Symbol>* symbols_ptr) const {
  std::vector<Symbol>& symbols = *symbols_ptr;
  std::priority_queue<Candidate, std::vector<Candidate>, LaterCandidate> queue;
  const auto consider = [&](size_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    if (const MergeResult* merge = FindMerge(symbols[pos].id, symbols[next].id)) {
      queue.push({merge->rank, static_cast<uint32_t>(pos), merge->id});
    }
  };
  for (size_t pos = 0; pos + 1 < symbols.size(); ++pos) consider(pos);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next < 0) continue;  // stale
    Symbol& right = symbols[left.next];
    const MergeResult* merge = FindMerge(left.id, right.id);
    if (merge == nullptr || merge->id != top.id) continue;  // stale
    left.id = top.id;
    left.len += right.len;
    left.next = right.next;
    right.len = 0;
    if (left.next >= 0) symbols[left.next].prev = static_cast<int32_t>(top.pos);
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
}

void Bpe::Tokenize(absl::string_view word,
                   std::vector<ModelToken>* tokens) const {
  if (options_.ignore_merges) {
    std::string spelled;
    if (options_.byte_level) {
      for (const char byte : word) {
        spelled += byte_chars_[static_cast<unsigned char>(byte)];
      }
    }
    const auto found = ids_.find(options_.byte_level ? absl::string_view(spelled)
                                                     : word);
    if (found != ids_.end()) {
      tokens->push_back({found->second, 0, static_cast<uint32_t>(word.size())});
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  InitialSymbols(word, &symbols);
  MergeAll(&symbols);
  uint32_t begin = 0;
  for (const Symbol& symbol : symbols) {
    if (symbol.len == 0) continue;
    tokens->push_back({symbol.id, begin, begin + symbol.len});
    begin += symbol.len;
  }
}

absl::string_view Bpe::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
  return pieces_[id];
}

std::optional<int32_t> Bpe::TokenToId(absl::string_view token) const {
  const auto found = ids_.find(token);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

}  // namespace favor::tokenizer
