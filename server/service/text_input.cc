#include "server/service/text_input.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace favor::service {
namespace {

using tokenizer::Encoding;

// Tokens [range.begin, range.end) of `content`, framed with the special
// tokens as Encode would frame them.
Encoding Framed(const tokenizer::Tokenizer& tokenizer, const Encoding& content,
                TokenRange range) {
  Encoding out;
  const auto copy = [&](const auto& from, auto& to) {
    to.assign(from.begin() + range.begin, from.begin() + range.end);
  };
  copy(content.ids, out.ids);
  copy(content.tokens, out.tokens);
  copy(content.spans, out.spans);
  copy(content.special_tokens_mask, out.special_tokens_mask);
  tokenizer.AddSpecialTokens(&out);
  return out;
}

// The text's tokens, without special tokens, truncated as the input's
// options need: the tokens kept of a truncated text, and no more than can be
// used otherwise, so that memory stays in proportion to the limits whatever
// the text's length. Those past the limit are counted, not held.
absl::StatusOr<Encoding> EncodeContent(int index, const std::string& text,
                                       const tokenizer::Tokenizer& tokenizer,
                                       const ResolvedEmbedOptions& options,
                                       const EmbedLimits& limits,
                                       int64_t room) {
  tokenizer::EncodeOptions encode;
  encode.add_special_tokens = false;
  // TRUNCATION_NONE keeps `room` too: a text with more is refused.
  encode.max_tokens = static_cast<size_t>(room);
  if (options.truncation == v1::TRUNCATION_LEFT) {
    encode.truncation_side = tokenizer::TruncationSide::kLeft;
  } else if (options.truncation == v1::TRUNCATION_CHUNK) {
    // Every window holds a token of the text at least once, so a text with
    // more tokens than a call may have cannot be served chunked.
    encode.max_tokens = static_cast<size_t>(limits.max_tokens_per_call);
  }
  absl::StatusOr<Encoding> content = tokenizer.Encode(text, encode);
  if (!content.ok()) {
    return absl::Status(
        content.status().code(),
        absl::StrCat("inputs[", index, "].text: ", content.status().message()));
  }
  return content;
}

PreparedInput Windows(const tokenizer::Tokenizer& tokenizer,
                      const Encoding& content, int64_t window,
                      int64_t overlap) {
  PreparedInput prepared;
  prepared.window_offsets.push_back(0);
  for (const TokenRange& range :
       ChunkWindows(static_cast<int64_t>(content.size()), window, overlap)) {
    const Encoding framed = Framed(tokenizer, content, range);
    prepared.token_ids.insert(prepared.token_ids.end(), framed.ids.begin(),
                              framed.ids.end());
    prepared.window_offsets.push_back(
        static_cast<int64_t>(prepared.token_ids.size()));
  }
  return prepared;
}

absl::Status CheckRoomForText(int64_t special,
                              const ResolvedEmbedOptions& options,
                              const EmbedLimits& limits) {
  const int64_t room = limits.max_tokens_per_input - special;
  if (room < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model's max_tokens_per_input (", limits.max_tokens_per_input,
        ") leaves no room for text beside its tokenizer's ", special,
        " special tokens"));
  }
  if (options.truncation == v1::TRUNCATION_CHUNK &&
      options.chunk_overlap_tokens >= room) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk_overlap_tokens is ", options.chunk_overlap_tokens,
        "; a window holds ", room, " tokens of text (max_tokens_per_input ",
        limits.max_tokens_per_input, " less ", special,
        " special tokens), and the overlap must be below that"));
  }
  return absl::OkStatus();
}

}  // namespace

TokenRange TokensOfBytes(const Encoding& encoding, int64_t begin, int64_t end) {
  // The tokens of the text lie between the special tokens the
  // post-processor placed, and their byte ranges are in order: binary
  // searches find the first that ends after `begin` and the first that
  // starts at or after `end`.
  int64_t lo = 0;
  int64_t hi = static_cast<int64_t>(encoding.size());
  while (lo < hi && encoding.special_tokens_mask[lo] != 0) ++lo;
  while (hi > lo && encoding.special_tokens_mask[hi - 1] != 0) --hi;
  const auto partition = [&](auto before) {
    int64_t low = lo, high = hi;
    while (low < high) {
      const int64_t mid = low + (high - low) / 2;
      if (before(encoding.spans[mid])) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  };
  const int64_t first = partition([&](const tokenizer::TokenSpan& span) {
    return static_cast<int64_t>(span.end) <= begin;
  });
  const int64_t last = partition([&](const tokenizer::TokenSpan& span) {
    return static_cast<int64_t>(span.begin) < end;
  });
  return {first, std::max(first, last)};
}

absl::Status SpanCoversNoToken(int index, int span_index,
                               const v1::Span& span) {
  return absl::InvalidArgumentError(absl::StrCat(
      "inputs[", index, "].spans[", span_index, "] is [", span.begin(), ", ",
      span.end(), "): it covers no token left after truncation"));
}

absl::StatusOr<PreparedInput> PrepareTextInput(
    int index, const v1::EmbedInput& input,
    const tokenizer::Tokenizer& tokenizer, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits) {
  const int64_t special =
      static_cast<int64_t>(tokenizer.num_added_special_tokens());
  RETURN_IF_ERROR(CheckRoomForText(special, options, limits));
  const int64_t room = limits.max_tokens_per_input - special;
  ASSIGN_OR_RETURN(
      const Encoding content,
      EncodeContent(index, input.text(), tokenizer, options, limits, room));
  const int64_t dropped = static_cast<int64_t>(content.num_truncated_tokens);
  const int64_t length = static_cast<int64_t>(content.size()) + dropped;
  if (length == 0 && special == 0) {
    // Else the batcher's "num_tokens must be >= 1", naming nothing.
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs[", index,
        "].text has no tokens: the tokenizer drops all of it (whitespace, "
        "format characters) and the model adds no special tokens"));
  }
  if (options.truncation == v1::TRUNCATION_CHUNK) {
    if (dropped > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs[", index, "].text has ", length,
          " tokens; chunked, they need more than the ",
          limits.max_tokens_per_call, " a call may have (max_tokens_per_call)"));
    }
    return Windows(tokenizer, content, room, options.chunk_overlap_tokens);
  }
  // Refuses a text over the limit without truncation; with it, Encode has
  // already kept these tokens.
  RETURN_IF_ERROR(KeptTokens(absl::StrCat("inputs[", index, "].text"), length,
                             room, limits.max_tokens_per_input,
                             options.truncation)
                      .status());
  const Encoding framed =
      Framed(tokenizer, content, {0, static_cast<int64_t>(content.size())});
  PreparedInput prepared;
  prepared.token_ids = framed.ids;
  prepared.num_truncated_tokens = dropped;
  for (int j = 0; j < input.spans_size(); ++j) {
    const TokenRange tokens =
        TokensOfBytes(framed, input.spans(j).begin(), input.spans(j).end());
    if (tokens.size() == 0) return SpanCoversNoToken(index, j, input.spans(j));
    prepared.spans.push_back(tokens);
  }
  return prepared;
}

}  // namespace favor::service
