#include "server/tokenizer/sequences.h"

#include "server/common/status_macros.h"

namespace favor::tokenizer {

absl::Status NormalizerSequence::Transform(const NormalizedString& in,
                                           NormalizedString* out) const {
  if (stages_.empty()) {
    out->Clear();
    out->AppendSlice(in, 0, static_cast<uint32_t>(in.text().size()));
    return absl::OkStatus();
  }
  NormalizedString buffers[2];
  const NormalizedString* current = &in;
  for (size_t i = 0; i + 1 < stages_.size(); ++i) {
    RETURN_IF_ERROR(stages_[i]->Transform(*current, &buffers[i % 2]));
    current = &buffers[i % 2];
  }
  return stages_.back()->Transform(*current, out);
}

absl::Status PreTokenizerSequence::Split(absl::string_view normalized,
                                         std::vector<ByteRange>* words) const {
  if (stages_.empty()) {
    if (!normalized.empty()) {
      words->push_back({0, static_cast<uint32_t>(normalized.size())});
    }
    return absl::OkStatus();
  }
  std::vector<ByteRange> current;
  RETURN_IF_ERROR(stages_[0]->Split(normalized, &current));
  std::vector<ByteRange> next;
  std::vector<ByteRange> parts;
  for (size_t i = 1; i < stages_.size(); ++i) {
    next.clear();
    for (const ByteRange& word : current) {
      parts.clear();
      RETURN_IF_ERROR(stages_[i]->Split(
          normalized.substr(word.begin, word.end - word.begin), &parts));
      for (const ByteRange& part : parts) {
        next.push_back({word.begin + part.begin, word.begin + part.end});
      }
    }
    current.swap(next);
  }
  words->insert(words->end(), current.begin(), current.end());
  return absl::OkStatus();
}

bool PreTokenizerSequence::Rewrite(const NormalizedString& in,
                                   bool at_text_start,
                                   NormalizedString* out) const {
  return !stages_.empty() && stages_[0]->Rewrite(in, at_text_start, out);
}

size_t PostProcessorSequence::added_tokens() const {
  size_t total = 0;
  for (const auto& stage : stages_) total += stage->added_tokens();
  return total;
}

void PostProcessorSequence::Process(Encoding* encoding) const {
  for (const auto& stage : stages_) stage->Process(encoding);
}

void PostProcessorSequence::TrimSpan(size_t index, absl::string_view token,
                                     TokenSpan* span) const {
  for (const auto& stage : stages_) stage->TrimSpan(index, token, span);
}

}  // namespace favor::tokenizer
