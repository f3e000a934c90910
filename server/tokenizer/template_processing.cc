#include "server/tokenizer/template_processing.h"

#include <algorithm>
#include <utility>

#include "absl/memory/memory.h"

namespace favor::tokenizer {

absl::StatusOr<std::unique_ptr<TemplateProcessing>> TemplateProcessing::Create(
    std::vector<Item> items) {
  const auto sequences =
      std::count_if(items.begin(), items.end(),
                    [](const Item& item) { return item.is_sequence; });
  if (sequences != 1) {
    return absl::InvalidArgumentError(
        "TemplateProcessing: the template must hold the sequence ($A) exactly "
        "once");
  }
  return absl::WrapUnique(new TemplateProcessing(std::move(items)));
}

void TemplateProcessing::Process(Encoding* encoding) const {
  Encoding text = std::move(*encoding);
  Encoding out;
  out.num_truncated_tokens = text.num_truncated_tokens;
  const size_t size = text.size() + added_tokens();
  out.ids.reserve(size);
  out.tokens.reserve(size);
  out.spans.reserve(size);
  out.special_tokens_mask.reserve(size);
  for (const Item& item : items_) {
    if (!item.is_sequence) {
      out.Append(item.id, item.token, TokenSpan{}, /*special=*/true);
      continue;
    }
    out.ids.insert(out.ids.end(), text.ids.begin(), text.ids.end());
    out.tokens.insert(out.tokens.end(), text.tokens.begin(), text.tokens.end());
    out.spans.insert(out.spans.end(), text.spans.begin(), text.spans.end());
    out.special_tokens_mask.insert(out.special_tokens_mask.end(),
                                   text.special_tokens_mask.begin(),
                                   text.special_tokens_mask.end());
  }
  *encoding = std::move(out);
}

}  // namespace favor::tokenizer
