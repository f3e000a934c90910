#include "server/tokenizer/byte_level_post_processor.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "server/tokenizer/byte_level_alphabet.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

bool IsSpaceLike(char32_t c) { return c == kByteLevelSpace || IsWhitespace(c); }

// Characters the token starts with that are space-like.
size_t LeadingSpaces(absl::string_view token) {
  size_t count = 0;
  size_t pos = 0;
  while (pos < token.size() && IsSpaceLike(NextChar(token, &pos))) ++count;
  return count;
}

size_t TrailingSpaces(absl::string_view token) {
  size_t count = 0;
  size_t end = token.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && IsContinuationByte(token[start])) --start;
    size_t pos = start;
    if (!IsSpaceLike(NextChar(token, &pos))) break;
    ++count;
    end = start;
  }
  return count;
}

}  // namespace

void TrimByteLevelSpan(size_t index, absl::string_view token,
                       bool add_prefix_space, TokenSpan* span) {
  size_t leading = LeadingSpaces(token);
  const size_t trailing = TrailingSpaces(token);
  if (leading > 0) {
    const bool is_first = index == 0 || span->begin == 0;
    if (is_first && add_prefix_space && leading == 1) leading = 0;
    span->begin = std::min(span->begin + leading, span->end);
  }
  if (trailing > 0 && span->end >= trailing) {
    span->end = std::max(span->end - trailing, span->begin);
  }
}

void ByteLevelPostProcessor::TrimSpan(size_t index, absl::string_view token,
                                      TokenSpan* span) const {
  if (trim_offsets_) TrimByteLevelSpan(index, token, add_prefix_space_, span);
}

absl::StatusOr<std::unique_ptr<RobertaProcessing>> RobertaProcessing::Create(
    const Options& options) {
  std::vector<TemplateProcessing::Item> items = {
      options.cls, {/*is_sequence=*/true, "", 0}, options.sep};
  auto frame = TemplateProcessing::Create(std::move(items));
  if (!frame.ok()) return frame.status();
  return absl::WrapUnique(new RobertaProcessing(*std::move(frame), options));
}

void RobertaProcessing::TrimSpan(size_t index, absl::string_view token,
                                 TokenSpan* span) const {
  trim_.TrimSpan(index, token, span);
}

}  // namespace favor::tokenizer
