#include "server/tokenizer/encoding.h"

#include <limits>

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

TruncatingAppender::TruncatingAppender(const EncodeOptions& options,
                                       size_t added_special_tokens,
                                       Encoding* encoding)
    : budget_(options.max_tokens == 0
                  ? std::numeric_limits<size_t>::max()
                  : options.max_tokens - added_special_tokens),
      keep_last_(options.truncation_side == TruncationSide::kLeft),
      encoding_(encoding) {}

void TruncatingAppender::Append(int32_t id, absl::string_view token,
                                TokenSpan span, bool special) {
  if (encoding_->size() < budget_) {
    encoding_->Append(id, token, span, special);
  } else if (!keep_last_ || budget_ == 0) {
    ++encoding_->num_truncated_tokens;
  } else {
    // The last `budget_` tokens are wanted: the oldest go in blocks of
    // `budget_` once twice that many are held, a constant cost per token.
    encoding_->Append(id, token, span, special);
    if (encoding_->size() == 2 * budget_) {
      encoding_->EraseFront(budget_);
      encoding_->num_truncated_tokens += budget_;
    }
  }
}

void TruncatingAppender::Finish() {
  if (encoding_->size() <= budget_) return;
  const size_t excess = encoding_->size() - budget_;
  encoding_->EraseFront(excess);
  encoding_->num_truncated_tokens += excess;
}

}  // namespace favor::tokenizer
