#include "server/service/embed_inputs.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/unicode.h"

namespace favor::service {
namespace {

using tokenizer::Encoding;

absl::Status CheckTokenIds(int index, const v1::EmbedInput& input,
                           int64_t vocab_size) {
  for (int j = 0; j < input.token_ids_size(); ++j) {
    if (static_cast<int64_t>(input.token_ids(j)) >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inputs[", index, "].token_ids[", j, "] is ", input.token_ids(j),
          "; must be in [0, ", vocab_size, ") (vocab_size)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTotal(const std::vector<PreparedInput>& inputs,
                        const EmbedLimits& limits) {
  int64_t total = 0;
  for (const PreparedInput& input : inputs) {
    total += static_cast<int64_t>(input.token_ids.size());
  }
  if (total <= limits.max_tokens_per_call) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "inputs have ", total, " tokens in all (after truncation); at most ",
      limits.max_tokens_per_call, " (max_tokens_per_call)"));
}

// Text inputs: encoded once without special tokens, truncated or cut into
// windows, then framed.

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

std::vector<TokenRange> ChunkWindows(int64_t length, int64_t window,
                                     int64_t overlap) {
  std::vector<TokenRange> windows;
  const int64_t stride = std::max<int64_t>(1, window - overlap);
  for (int64_t begin = 0;; begin += stride) {
    const int64_t end = std::min(begin + window, length);
    windows.push_back({begin, end});
    if (end == length) break;
  }
  return windows;
}

absl::StatusOr<TokenRange> KeptTokens(const std::string& field, int64_t length,
                                      int64_t budget, int64_t limit,
                                      v1::Truncation truncation) {
  if (length <= budget) return TokenRange{0, length};
  if (truncation == v1::TRUNCATION_LEFT)
    return TokenRange{length - budget, length};
  if (truncation == v1::TRUNCATION_RIGHT) return TokenRange{0, budget};
  return absl::InvalidArgumentError(absl::StrCat(
      field, " has ", length + (limit - budget), " tokens; at most ", limit,
      " (max_tokens_per_input) unless truncation is TRUNCATION_LEFT, "
      "TRUNCATION_RIGHT or TRUNCATION_CHUNK"));
}

absl::StatusOr<PreparedInput> PrepareTokenIdInput(
    int index, const v1::EmbedInput& input, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits) {
  RETURN_IF_ERROR(CheckTokenIds(index, input, limits.vocab_size));
  if (options.prompt_named) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inputs[", index, "] holds token ids: prompt_name applies to text "
        "inputs (put the prompt's tokens in the ids instead)"));
  }
  const auto& ids = input.token_ids();
  const int64_t length = ids.size();
  PreparedInput prepared;
  if (options.truncation == v1::TRUNCATION_CHUNK) {
    prepared.window_offsets.push_back(0);
    for (const TokenRange& w : ChunkWindows(length, limits.max_tokens_per_input,
                                            options.chunk_overlap_tokens)) {
      prepared.token_ids.insert(prepared.token_ids.end(), ids.begin() + w.begin,
                                ids.begin() + w.end);
      prepared.window_offsets.push_back(
          static_cast<int64_t>(prepared.token_ids.size()));
    }
    return prepared;
  }
  ASSIGN_OR_RETURN(const TokenRange kept,
                   KeptTokens(absl::StrCat("inputs[", index, "].token_ids"),
                              length, limits.max_tokens_per_input,
                              limits.max_tokens_per_input, options.truncation));
  prepared.token_ids.assign(ids.begin() + kept.begin, ids.begin() + kept.end);
  prepared.num_truncated_tokens = length - kept.size();
  for (int j = 0; j < input.spans_size(); ++j) {
    // Positions in the kept tokens; CheckEmbedRequest checked the bounds.
    const int64_t begin = std::max(input.spans(j).begin(), kept.begin);
    const int64_t end = std::min(input.spans(j).end(), kept.end);
    if (begin >= end) return SpanCoversNoToken(index, j, input.spans(j));
    prepared.spans.push_back({begin - kept.begin, end - kept.begin});
  }
  return prepared;
}

absl::StatusOr<std::vector<PreparedInput>> PrepareEmbedInputs(
    const v1::EmbedRequest& request, const ResolvedEmbedOptions& options,
    const EmbedLimits& limits, const tokenizer::Tokenizer* tokenizer) {
  std::vector<PreparedInput> prepared(request.inputs_size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    const v1::EmbedInput& input = request.inputs(i);
    if (input.text().empty()) {
      ASSIGN_OR_RETURN(prepared[i],
                       PrepareTokenIdInput(i, input, options, limits));
    } else {
      ASSIGN_OR_RETURN(prepared[i],
                       PrepareTextInput(i, input, *tokenizer, options, limits));
    }
  }
  RETURN_IF_ERROR(CheckTotal(prepared, limits));
  return prepared;
}

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
  // The prompt goes before the text and is tokenised with it; spans, byte
  // ranges of the text, move by its length. The text is checked alone
  // first, so that an invalid byte's offset is the text's.
  const int64_t shift = static_cast<int64_t>(options.prompt.size());
  if (shift > 0) {
    RETURN_IF_ERROR(tokenizer::ValidateUtf8(
        input.text(), absl::StrCat("inputs[", index, "].text")));
  }
  ASSIGN_OR_RETURN(
      const Encoding content,
      EncodeContent(index, shift > 0 ? options.prompt + input.text()
                                     : input.text(),
                    tokenizer, options, limits, room));
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
      return absl::InvalidArgumentError(
          absl::StrCat("inputs[", index, "].text has ", length,
                       " tokens; chunked, they need more than the ",
                       limits.max_tokens_per_call,
                       " a call may have (max_tokens_per_call)"));
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
    const TokenRange tokens = TokensOfBytes(
        framed, input.spans(j).begin() + shift, input.spans(j).end() + shift);
    if (tokens.size() == 0) return SpanCoversNoToken(index, j, input.spans(j));
    prepared.spans.push_back(tokens);
  }
  return prepared;
}

}  // namespace favor::service
