#include "server/tokenizer/unigram.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

// The best path to one byte position: its last piece starts at `start`.
struct Unigram::Node {
  double score = 0;
  int32_t id = -1;
  int64_t start = -1;  // -1: not reached
};

namespace {

// The crate's penalty below the lowest score for an unknown character.
constexpr double kUnkPenalty = 10.0;

}  // namespace

absl::StatusOr<std::unique_ptr<Unigram>> Unigram::Create(
    std::vector<Piece> pieces, const Options& options) {
  if (pieces.empty()) {
    return absl::InvalidArgumentError("Unigram: the vocabulary is empty");
  }
  if (pieces.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError("Unigram: too many pieces");
  }
  if (options.unk_id < 0 || static_cast<size_t>(options.unk_id) >= pieces.size()) {
    return absl::InvalidArgumentError(
        "Unigram: unk_id is missing or outside the vocabulary (Hugging Face "
        "fails to encode unknown characters without one)");
  }
  for (size_t id = 0; id < pieces.size(); ++id) {
    if (pieces[id].piece.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Unigram: piece ", id, " is empty"));
    }
  }
  return absl::WrapUnique(new Unigram(std::move(pieces), options));
}

Unigram::Unigram(std::vector<Piece> pieces, const Options& options)
    : pieces_(std::move(pieces)),
      unk_id_(static_cast<int32_t>(options.unk_id)),
      byte_fallback_(options.byte_fallback) {
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t id = 0; id < pieces_.size(); ++id) {
    const std::string& piece = pieces_[id].piece;
    ids_.insert_or_assign(piece, static_cast<int32_t>(id));
    min_score = std::min(min_score, pieces_[id].score);
    uint32_t node = 0;
    for (const char byte : piece) {
      const uint64_t key = (uint64_t{node} << 8) | static_cast<unsigned char>(byte);
      const auto [child, inserted] = children_.try_emplace(
          key, static_cast<uint32_t>(piece_of_node_.size()));
      if (inserted) piece_of_node_.push_back(-1);
      node = child->second;
    }
    piece_of_node_[node] = static_cast<int32_t>(id);
  }
  // The trie finds a piece by its text; a repeated one by its last id.
  for (int32_t& id : piece_of_node_) {
    if (id >= 0) id = ids_.at(pieces_[id].piece);
  }
  unk_score_ = min_score - kUnkPenalty;
  for (int byte = 0; byte < 256; ++byte) {
    const auto found = ids_.find(absl::StrFormat("<0x%02X>", byte));
    byte_fallback_ids_[byte] = found == ids_.end() ? -1 : found->second;
  }
}

void Unigram::BestPath(absl::string_view word, std::vector<Node>* best) const {
  best->assign(word.size() + 1, Node());
  (*best)[0].start = 0;
  const auto offer = [best](size_t end, size_t start, double score, int32_t id) {
    Node& node = (*best)[end];
    if (node.start < 0 || score > node.score) {
      node = {score, id, static_cast<int64_t>(start)};
    }
  };
  size_t start = 0;
  while (start < word.size()) {
    const double so_far = (*best)[start].score;
    size_t char_end = start;
    NextChar(word, &char_end);
    bool has_single_node = false;
    uint32_t node = 0;
    for (size_t pos = start; pos < word.size(); ++pos) {
      const auto child = children_.find((uint64_t{node} << 8) |
                                        static_cast<unsigned char>(word[pos]));
      if (child == children_.end()) break;
      node = child->second;
      const int32_t id = piece_of_node_[node];
      if (id < 0) continue;
      offer(pos + 1, start, so_far + pieces_[id].score, id);
      has_single_node = has_single_node || pos + 1 == char_end;
    }
    if (!has_single_node) offer(char_end, start, so_far + unk_score_, unk_id_);
    start = char_end;
  }
}

void Unigram::Emit(absl::string_view word, uint32_t begin, uint32_t end,
                   std::vector<ModelToken>* tokens) const {
  const absl::string_view text = word.substr(begin, end - begin);
  const auto found = ids_.find(text);
  if (found != ids_.end()) {
    tokens->push_back({found->second, begin, end});
    return;
  }
  if (byte_fallback_ &&
      std::all_of(text.begin(), text.end(), [this](char byte) {
        return byte_fallback_ids_[static_cast<unsigned char>(byte)] >= 0;
      })) {
    for (const char byte : text) {
      tokens->push_back(
          {byte_fallback_ids_[static_cast<unsigned char>(byte)], begin, end});
    }
    return;
  }
  tokens->push_back({unk_id_, begin, end});
}

void Unigram::Tokenize(absl::string_view word,
                       std::vector<ModelToken>* tokens) const {
  std::vector<Node> best;
  BestPath(word, &best);
  // Walk back from the end; nodes of the unknown id (unknown characters,
  // or the unknown piece itself) fuse into one run, as the crate's
  // fuse_unk does.
  std::vector<std::pair<uint32_t, uint32_t>> spans;  // reversed
  std::optional<std::pair<uint32_t, uint32_t>> unknown_run;
  size_t end = word.size();
  while (end > 0) {
    const Node& node = best[end];
    const auto start = static_cast<uint32_t>(node.start);
    if (node.id == unk_id_) {
      if (!unknown_run) unknown_run.emplace(start, static_cast<uint32_t>(end));
      unknown_run->first = start;
    } else {
      if (unknown_run) spans.push_back(*unknown_run);
      unknown_run.reset();
      spans.push_back({start, static_cast<uint32_t>(end)});
    }
    end = start;
  }
  if (unknown_run) spans.push_back(*unknown_run);
  for (auto span = spans.rbegin(); span != spans.rend(); ++span) {
    Emit(word, span->first, span->second, tokens);
  }
}

absl::string_view Unigram::IdToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
  return pieces_[id].piece;
}

std::optional<int32_t> Unigram::TokenToId(absl::string_view token) const {
  const auto found = ids_.find(token);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

}  // namespace favor::tokenizer
