#include "server/service/tokenize_texts.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace favor::service {
namespace {

void Write(const tokenizer::Encoding& encoding, v1::TokenizedText* out) {
  const int size = static_cast<int>(encoding.size());
  out->mutable_ids()->Reserve(size);
  out->mutable_tokens()->Reserve(size);
  out->mutable_begin_offsets()->Reserve(size);
  out->mutable_end_offsets()->Reserve(size);
  out->mutable_special()->Reserve(size);
  for (int t = 0; t < size; ++t) {
    out->add_ids(static_cast<uint32_t>(encoding.ids[t]));
    out->add_tokens(std::string(encoding.tokens[t]));
    out->add_begin_offsets(static_cast<uint32_t>(encoding.spans[t].begin));
    out->add_end_offsets(static_cast<uint32_t>(encoding.spans[t].end));
    out->add_special(encoding.special_tokens_mask[t] != 0);
  }
}

}  // namespace

absl::Status TokenizeTexts(const v1::TokenizeRequest& request,
                           const tokenizer::Tokenizer& tokenizer,
                           int64_t max_tokens, v1::TokenizeResponse* response) {
  int64_t tokens = 0;
  tokenizer::EncodeOptions options;
  options.add_special_tokens = !request.without_special_tokens();
  const int64_t special =
      options.add_special_tokens
          ? static_cast<int64_t>(tokenizer.num_added_special_tokens())
          : 0;
  for (int i = 0; i < request.texts_size(); ++i) {
    // Truncated at what is left of the call's tokens, so that a text over
    // it is counted, not held.
    options.max_tokens = static_cast<size_t>(
        std::max(max_tokens - tokens, std::max<int64_t>(special, 1)));
    absl::StatusOr<tokenizer::Encoding> encoding =
        tokenizer.Encode(request.texts(i), options);
    if (!encoding.ok()) {
      return absl::Status(
          encoding.status().code(),
          absl::StrCat("texts[", i, "]: ", encoding.status().message()));
    }
    tokens += static_cast<int64_t>(encoding->size() +
                                   encoding->num_truncated_tokens);
    if (tokens > max_tokens) {
      response->clear_texts();
      return absl::InvalidArgumentError(absl::StrCat(
          "texts[0..", i, "] have ", tokens, " tokens, over the ", max_tokens,
          " a call may have (max_tokens_per_call)"));
    }
    Write(*encoding, response->add_texts());
  }
  return absl::OkStatus();
}

}  // namespace favor::service
