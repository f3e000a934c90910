#include "server/tokenizer/pipeline_tokenizer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

absl::Status CheckText(absl::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("text is empty");
  if (text.size() > kMaxTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("text has ", text.size(),
                     " bytes, over the tokenizer's limit of ", kMaxTextBytes));
  }
  return ValidateUtf8(text, "text");
}

Framing FramingOf(const Tokenizer& tokenizer) {
  Encoding framed;
  framed.Append(0, "", {}, /*special=*/false);  // stands for the text
  tokenizer.AddSpecialTokens(&framed);
  Framing framing;
  std::vector<SpecialToken>* side = &framing.before;
  for (size_t t = 0; t < framed.size(); ++t) {
    if (framed.special_tokens_mask[t] == 0) {
      side = &framing.after;
      continue;
    }
    side->push_back({std::string(framed.tokens[t]), framed.ids[t]});
  }
  return framing;
}

// Buffers one Encode call reuses across its segments.
struct PipelineTokenizer::Scratch {
  std::vector<AddedVocabulary::Segment> segments;
  std::vector<AddedVocabulary::Segment> normalized_segments;
  NormalizedString normalized;
  NormalizedString piece;
  NormalizedString rewritten;
  std::vector<ByteRange> words;
  std::vector<ModelToken> tokens;
  size_t text_tokens = 0;  // tokens of the text so far (TrimSpan's index)
};

PipelineTokenizer::PipelineTokenizer(Stages stages)
    : stages_(std::move(stages)) {
  for (const AddedVocabulary* added :
       {&stages_.added, &stages_.normalized_added}) {
    for (const AddedToken& token : added->tokens()) {
      if (token.special) special_tokens_.push_back({token.content, token.id});
    }
  }
  for (const SpecialToken& token : stages_.extra_special_tokens) {
    const bool known = std::any_of(
        special_tokens_.begin(), special_tokens_.end(),
        [&](const SpecialToken& seen) { return seen.id == token.id; });
    if (!known) special_tokens_.push_back(token);
  }
  std::sort(
      special_tokens_.begin(), special_tokens_.end(),
      [](const SpecialToken& a, const SpecialToken& b) { return a.id < b.id; });
}

absl::StatusOr<Encoding> PipelineTokenizer::Encode(
    absl::string_view text, const EncodeOptions& options) const {
  RETURN_IF_ERROR(CheckText(text));
  RETURN_IF_ERROR(stages_.model->CheckCost(text));
  const PostProcessor* post =
      options.add_special_tokens ? stages_.post_processor.get() : nullptr;
  const size_t added_special_tokens = post ? post->added_tokens() : 0;
  RETURN_IF_ERROR(CheckTruncation(options, added_special_tokens));
  Scratch scratch;
  Encoding encoding;
  TruncatingAppender appender(options, added_special_tokens, &encoding);
  stages_.added.Split(text, &scratch.segments);
  for (const AddedVocabulary::Segment& segment : scratch.segments) {
    if (segment.added_id < 0) {
      RETURN_IF_ERROR(EncodeSegment(text, segment.range, &scratch, &appender));
    } else {
      AppendTextToken(segment.added_id,
                      {segment.range.begin, segment.range.end}, &scratch,
                      &appender);
    }
  }
  appender.Finish();
  if (post != nullptr) post->Process(&encoding);
  return encoding;
}

absl::Status PipelineTokenizer::EncodeSegment(
    absl::string_view text, ByteRange segment, Scratch* scratch,
    TruncatingAppender* appender) const {
  const absl::string_view piece =
      text.substr(segment.begin, segment.end - segment.begin);
  NormalizedString& normalized = scratch->normalized;
  if (stages_.normalizer) {
    RETURN_IF_ERROR(
        stages_.normalizer->Normalize(piece, segment.begin, &normalized));
  } else {
    normalized.AssignIdentity(piece, segment.begin);
  }
  const bool at_text_start = segment.begin == 0;
  if (stages_.normalized_added.tokens().empty()) {
    return EncodeNormalized(normalized, at_text_start, scratch, appender);
  }
  auto& parts = scratch->normalized_segments;
  parts.clear();
  stages_.normalized_added.Split(normalized.text(), &parts);
  for (const AddedVocabulary::Segment& part : parts) {
    if (part.added_id >= 0) {
      AppendTextToken(part.added_id,
                      normalized.SourceSpan(part.range.begin, part.range.end),
                      scratch, appender);
      continue;
    }
    scratch->piece.Clear();
    scratch->piece.AppendSlice(normalized, part.range.begin, part.range.end);
    RETURN_IF_ERROR(EncodeNormalized(scratch->piece,
                                     at_text_start && part.range.begin == 0,
                                     scratch, appender));
  }
  return absl::OkStatus();
}

absl::Status PipelineTokenizer::EncodeNormalized(
    const NormalizedString& input, bool at_text_start, Scratch* scratch,
    TruncatingAppender* appender) const {
  const NormalizedString* normalized = &input;
  if (stages_.pre_tokenizer && stages_.pre_tokenizer->Rewrite(
                                   input, at_text_start, &scratch->rewritten)) {
    normalized = &scratch->rewritten;
  }
  const absl::string_view normal = normalized->text();
  scratch->words.clear();
  if (stages_.pre_tokenizer) {
    RETURN_IF_ERROR(stages_.pre_tokenizer->Split(normal, &scratch->words));
  } else if (!normal.empty()) {
    scratch->words.push_back({0, static_cast<uint32_t>(normal.size())});
  }
  for (const ByteRange& word : scratch->words) {
    scratch->tokens.clear();
    stages_.model->Tokenize(normal.substr(word.begin, word.end - word.begin),
                            &scratch->tokens);
    for (const ModelToken& token : scratch->tokens) {
      AppendTextToken(token.id,
                      normalized->SourceSpan(word.begin + token.begin,
                                             word.begin + token.end),
                      scratch, appender);
    }
  }
  return absl::OkStatus();
}

void PipelineTokenizer::AppendTextToken(int32_t id, TokenSpan span,
                                        Scratch* scratch,
                                        TruncatingAppender* appender) const {
  const absl::string_view token = IdToToken(id);
  if (stages_.post_processor) {
    stages_.post_processor->TrimSpan(scratch->text_tokens, token, &span);
  }
  ++scratch->text_tokens;
  appender->Append(id, token, span, /*special=*/false);
}

size_t PipelineTokenizer::num_added_special_tokens() const {
  return stages_.post_processor ? stages_.post_processor->added_tokens() : 0;
}

void PipelineTokenizer::AddSpecialTokens(Encoding* encoding) const {
  if (stages_.post_processor) stages_.post_processor->Process(encoding);
}

size_t PipelineTokenizer::vocab_size() const {
  size_t size = stages_.model->vocab_size();
  for (const AddedVocabulary* added :
       {&stages_.added, &stages_.normalized_added}) {
    for (const AddedToken& token : added->tokens()) {
      size = std::max(size, static_cast<size_t>(token.id) + 1);
    }
  }
  return size;
}

absl::string_view PipelineTokenizer::IdToToken(int32_t id) const {
  if (const AddedToken* added = stages_.added.Find(id)) return added->content;
  if (const AddedToken* added = stages_.normalized_added.Find(id)) {
    return added->content;
  }
  return stages_.model->IdToToken(id);
}

std::optional<int32_t> PipelineTokenizer::TokenToId(
    absl::string_view token) const {
  for (const AddedVocabulary* vocabulary :
       {&stages_.added, &stages_.normalized_added}) {
    for (const AddedToken& added : vocabulary->tokens()) {
      if (added.content == token) return added.id;
    }
  }
  return stages_.model->TokenToId(token);
}

}  // namespace favor::tokenizer
