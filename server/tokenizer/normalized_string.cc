#include "server/tokenizer/normalized_string.h"

#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

void NormalizedString::Clear() {
  text_.clear();
  identity_ = false;
  source_begin_.clear();
  source_end_.clear();
}

void NormalizedString::AssignIdentity(absl::string_view text,
                                      uint32_t source_offset) {
  Clear();
  text_.assign(text.data(), text.size());
  identity_ = true;
  identity_offset_ = source_offset;
}

void NormalizedString::Append(char32_t c, uint32_t source_begin,
                              uint32_t source_end) {
  char bytes[4];
  const int length =
      c < 0x80 ? (bytes[0] = static_cast<char>(c), 1) : EncodeUtf8(c, bytes);
  text_.append(bytes, length);
  source_begin_.insert(source_begin_.end(), length, source_begin);
  source_end_.insert(source_end_.end(), length, source_end);
}

void NormalizedString::AppendSlice(const NormalizedString& from,
                                   uint32_t begin, uint32_t end) {
  size_t pos = begin;
  while (pos < end) {
    const auto start = static_cast<uint32_t>(pos);
    const char32_t c = NextChar(from.text_, &pos);
    Append(c, from.SourceOfByte(start));
  }
}

TokenSpan NormalizedString::SourceSpan(uint32_t begin, uint32_t end) const {
  if (identity_) {
    while (begin > 0 && IsContinuationByte(text_[begin])) --begin;
    while (end < text_.size() && IsContinuationByte(text_[end])) ++end;
    return {identity_offset_ + begin, identity_offset_ + end};
  }
  return {source_begin_[begin], source_end_[end - 1]};
}

AlignedTransform::AlignedTransform(const NormalizedString& in,
                                   NormalizedString* out)
    : in_(in), out_(out) {
  out_->Clear();
  if (!in.empty()) {
    const size_t start = in.SourceOfByte(0).begin;
    last_ = {start, start};
  }
}

void AlignedTransform::Consume() {
  if (pos_ >= in_.text().size()) return;
  last_ = in_.SourceOfByte(static_cast<uint32_t>(pos_));
  NextChar(in_.text(), &pos_);
}

void AlignedTransform::Emit(char32_t c, int change) {
  if (change > 0) {
    out_->Append(c, last_);
    return;
  }
  Consume();
  out_->Append(c, last_);
  Skip(-change);
}

void AlignedTransform::Skip(int count) {
  for (int i = 0; i < count; ++i) Consume();
}

}  // namespace favor::tokenizer
