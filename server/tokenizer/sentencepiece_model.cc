#include "server/tokenizer/sentencepiece_model.h"

#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/pipeline_tokenizer.h"
#include "server/tokenizer/sentencepiece_module.h"
#include "server/tokenizer/template_processing.h"
#include "server/tokenizer/tokenizer_builders.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {

absl::StatusOr<std::unique_ptr<SentencePieceModel>> SentencePieceModel::Load(
    const std::string& serialized, absl::string_view what) {
  absl::StatusOr<std::unique_ptr<spm_bridge::Processor>> processor =
      LoadSentencePieceProcessor(serialized);
  if (processor.status().code() == absl::StatusCode::kInvalidArgument) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": not a SentencePiece model: ", processor.status().message()));
  }
  if (!processor.ok()) {
    return absl::Status(processor.status().code(),
                        absl::StrCat(what, ": ", processor.status().message()));
  }
  return absl::WrapUnique(new SentencePieceModel(*std::move(processor)));
}

SentencePieceModel::SentencePieceModel(
    std::unique_ptr<spm_bridge::Processor> processor)
    : processor_(std::move(processor)) {
  for (int id = 0; id < processor_->size(); ++id) {
    if (processor_->IsUnknown(id) || processor_->IsControl(id)) continue;
    const std::string& piece = processor_->IdToPiece(id);
    // A model may hold pieces that are not UTF-8; no valid text matches
    // one, so its characters count as unknown.
    if (!ValidateUtf8(piece, "piece").ok()) continue;
    for (size_t pos = 0; pos < piece.size();) {
      known_chars_.insert(NextChar(piece, &pos));
    }
  }
  if (known_chars_.contains(U'\u2581')) known_chars_.insert(U' ');
}

absl::Status SentencePieceModel::CheckCost(absl::string_view text) const {
  // A run ends at a known character that no combining mark follows (the
  // normaliser may compose the two into an unknown one).
  size_t run_begin = 0;
  bool in_run = false;
  for (size_t pos = 0; pos < text.size();) {
    const size_t begin = pos;
    const char32_t c = NextChar(text, &pos);
    bool mark_follows = false;
    if (pos < text.size()) {
      size_t after = pos;
      const char32_t following = NextChar(text, &after);
      mark_follows =
          CombiningClass(following) != 0 || IsNonspacingMark(following);
    }
    if (known_chars_.contains(c) && !mark_follows) {
      in_run = false;
      continue;
    }
    if (!in_run) {
      in_run = true;
      run_begin = begin;
    }
    if (pos - run_begin > kMaxUnknownRunBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "text has over ", kMaxUnknownRunBytes,
          " bytes in a row (from byte ", run_begin,
          ") of characters the SentencePiece model lacks: libsentencepiece's "
          "time grows with the square of such a run"));
    }
  }
  return absl::OkStatus();
}

void SentencePieceModel::Tokenize(absl::string_view word,
                                  std::vector<ModelToken>* tokens) const {
  std::vector<spm_bridge::Piece> pieces;
  std::string error;
  // Encode fails only for a model that did not load, which Load refuses.
  if (!processor_->Encode(std::string_view(word.data(), word.size()), &pieces,
                          &error)) {
    return;
  }
  tokens->reserve(tokens->size() + pieces.size());
  for (const spm_bridge::Piece& piece : pieces) {
    tokens->push_back({piece.id, piece.begin, piece.end});
  }
}

absl::string_view SentencePieceModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= processor_->size()) return {};
  const std::string& piece = processor_->IdToPiece(id);
  return absl::string_view(piece.data(), piece.size());
}

std::optional<int32_t> SentencePieceModel::TokenToId(
    absl::string_view token) const {
  const int id =
      processor_->PieceToId(std::string_view(token.data(), token.size()));
  if (id < 0) return std::nullopt;
  return id;
}

size_t SentencePieceModel::vocab_size() const {
  return static_cast<size_t>(processor_->size());
}

namespace {

// <s> $A </s> as the options ask; INVALID_ARGUMENT when the model has no such
// token.
absl::Status AddBosEos(const SentencePieceOptions& options,
                       const spm_bridge::Processor& processor,
                       absl::string_view what,
                       PipelineTokenizer::Stages* stages) {
  std::vector<TemplateProcessing::Item> items = {{/*is_sequence=*/true, "", 0}};
  const auto add = [&](int id, const char* name, bool front) -> absl::Status {
    if (id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", name, " is asked for but the model has no ",
                       name, " token"));
    }
    TemplateProcessing::Item item{false, processor.IdToPiece(id), id};
    items.insert(front ? items.begin() : items.end(), item);
    return absl::OkStatus();
  };
  if (options.add_bos)
    RETURN_IF_ERROR(add(processor.bos_id(), "add_bos", true));
  if (options.add_eos)
    RETURN_IF_ERROR(add(processor.eos_id(), "add_eos", false));
  if (items.size() == 1) return absl::OkStatus();
  ASSIGN_OR_RETURN(stages->post_processor, TemplateProcessing::Create(items));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromSentencePiece(
    const std::string& model, const SentencePieceOptions& options,
    absl::string_view what) {
  ASSIGN_OR_RETURN(std::unique_ptr<SentencePieceModel> loaded,
                   SentencePieceModel::Load(model, what));
  const spm_bridge::Processor& processor = loaded->processor();
  PipelineTokenizer::Stages stages;
  stages.kind = "sentencepiece";
  for (const int id :
       {processor.unk_id(), processor.bos_id(), processor.eos_id()}) {
    if (id >= 0)
      stages.extra_special_tokens.push_back({processor.IdToPiece(id), id});
  }
  RETURN_IF_ERROR(AddBosEos(options, processor, what, &stages));
  stages.model = std::move(loaded);
  return std::make_unique<PipelineTokenizer>(std::move(stages));
}

}  // namespace favor::tokenizer
