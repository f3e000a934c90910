#include "server/tokenizer/split_pre_tokenizer.h"

#include <algorithm>

namespace favor::tokenizer {
namespace {

// A piece of the text: a match of the pattern or the text between two.
struct Piece {
  ByteRange range;
  bool is_match = false;
};

// The crate's Pattern::find_matches: the whole text in order, matches and
// the gaps between them (an empty text is one empty gap).
std::vector<Piece> Pieces(absl::string_view text,
                          const std::vector<ByteRange>& matches, bool invert) {
  std::vector<Piece> pieces;
  pieces.reserve(2 * matches.size() + 1);
  uint32_t previous_end = 0;
  for (const ByteRange& match : matches) {
    if (match.begin != previous_end) {
      pieces.push_back({{previous_end, match.begin}, invert});
    }
    pieces.push_back({match, !invert});
    previous_end = match.end;
  }
  const auto size = static_cast<uint32_t>(text.size());
  if (previous_end != size || text.empty()) {
    pieces.push_back({{previous_end, size}, invert});
  }
  return pieces;
}

// The pieces that stay, as NormalizedString::split folds them for
// `behavior`.
std::vector<ByteRange> Kept(const std::vector<Piece>& pieces,
                            SplitBehavior behavior) {
  std::vector<ByteRange> kept;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Piece& piece : pieces) {
        if (!piece.is_match) kept.push_back(piece.range);
      }
      break;
    case SplitBehavior::kIsolated:
      for (const Piece& piece : pieces) kept.push_back(piece.range);
      break;
    case SplitBehavior::kContiguous:
      for (const Piece& piece : pieces) {
        if (piece.is_match == previous_match && !kept.empty()) {
          kept.back().end = piece.range.end;
        } else {
          kept.push_back(piece.range);
        }
        previous_match = piece.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Piece& piece : pieces) {
        if (piece.is_match && !previous_match && !kept.empty()) {
          kept.back().end = piece.range.end;
        } else {
          kept.push_back(piece.range);
        }
        previous_match = piece.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      // The same fold from the end.
      for (auto piece = pieces.rbegin(); piece != pieces.rend(); ++piece) {
        if (piece->is_match && !previous_match && !kept.empty()) {
          kept.back().begin = piece->range.begin;
        } else {
          kept.push_back(piece->range);
        }
        previous_match = piece->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  return kept;
}

}  // namespace

absl::Status SplitPreTokenizer::Split(absl::string_view normalized,
                                      std::vector<ByteRange>* words) const {
  std::vector<ByteRange> matches;
  if (!normalized.empty()) {
    const absl::Status found = pattern_->FindAll(normalized, &matches);
    if (!found.ok()) return found;
  }
  for (const ByteRange& word :
       Kept(Pieces(normalized, matches, invert_), behavior_)) {
    // The crate drops empty splits.
    if (word.end > word.begin) words->push_back(word);
  }
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
