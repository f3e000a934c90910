#include "server/service/embed_inputs.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/service/text_input.h"

namespace favor::service {
namespace {

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

}  // namespace favor::service
