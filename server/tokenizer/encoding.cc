#include "server/tokenizer/encoding.h"

#include "absl/strings/str_cat.h"

namespace favor::tokenizer {

void Encoding::Append(int32_t id, absl::string_view token, TokenSpan span,
                      bool special) {
  ids.push_back(id);
  tokens.push_back(token);
  spans.push_back(span);
  special_tokens_mask.push_back(special ? 1 : 0);
}

void Encoding::EraseFront(size_t count) {
  ids.erase(ids.begin(), ids.begin() + count);
  tokens.erase(tokens.begin(), tokens.begin() + count);
  spans.erase(spans.begin(), spans.begin() + count);
  special_tokens_mask.erase(special_tokens_mask.begin(),
                            special_tokens_mask.begin() + count);
}

void Encoding::EraseBack(size_t count) {
  const size_t kept = size() - count;
  ids.resize(kept);
  tokens.resize(kept);
  spans.resize(kept);
  special_tokens_mask.resize(kept);
}

absl::Status CheckTruncation(const EncodeOptions& options,
                             size_t added_special_tokens) {
  if (options.max_tokens == 0 || options.max_tokens >= added_special_tokens) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "max_tokens ", options.max_tokens, " leaves no room for the ",
      added_special_tokens, " special tokens; it must be at least ",
      added_special_tokens));
}

void Truncate(const EncodeOptions& options, size_t added_special_tokens,
              Encoding* encoding) {
  if (options.max_tokens == 0) return;
  const size_t budget = options.max_tokens - added_special_tokens;
  if (encoding->size() <= budget) return;
  const size_t excess = encoding->size() - budget;
  if (options.truncation_side == TruncationSide::kLeft) {
    encoding->EraseFront(excess);
  } else {
    encoding->EraseBack(excess);
  }
}

}  // namespace favor::tokenizer
