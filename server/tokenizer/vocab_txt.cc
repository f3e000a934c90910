// tokenizer_builders.h: a BERT tokenizer from a plain vocab.txt.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/bert_pre_tokenizer.h"
#include "server/tokenizer/pipeline_tokenizer.h"
#include "server/tokenizer/template_processing.h"
#include "server/tokenizer/tokenizer_builders.h"
#include "server/tokenizer/unicode.h"

namespace favor::tokenizer {
namespace {

// One piece a line, the line's number its id. Trailing whitespace (a "\r"
// from a Windows file) is dropped, as Hugging Face reads the file.
absl::StatusOr<std::vector<std::string>> ReadPieces(absl::string_view vocab,
                                                    absl::string_view what) {
  RETURN_IF_ERROR(ValidateUtf8(vocab, what));
  if (!vocab.empty() && vocab.back() == '\n') vocab.remove_suffix(1);
  std::vector<std::string> pieces;
  for (absl::string_view line : absl::StrSplit(vocab, '\n')) {
    while (!line.empty() &&
           (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    pieces.emplace_back(line);
  }
  return pieces;
}

// [CLS] $A [SEP], and the special tokens found in the vocabulary as
// non-normalized added tokens, as BertTokenizerFast would save them.
absl::Status AddBertSpecials(const VocabTxtOptions& options, const Model& model,
                             absl::string_view what,
                             PipelineTokenizer::Stages* stages) {
  std::vector<AddedToken> added;
  for (const std::string* name :
       {&options.pad_token, &options.wordpiece.unk_token, &options.cls_token,
        &options.sep_token, &options.mask_token}) {
    if (const auto id = model.TokenToId(*name)) {
      added.push_back({*id, *name, /*special=*/true});
    }
  }
  ASSIGN_OR_RETURN(stages->added, AddedVocabulary::Create(std::move(added)));
  std::vector<TemplateProcessing::Item> items;
  for (const std::string* name : {&options.cls_token, &options.sep_token}) {
    const auto id = model.TokenToId(*name);
    if (!id) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": special token \"", *name, "\" is not in the vocabulary"));
    }
    items.push_back({/*is_sequence=*/false, *name, *id});
    stages->extra_special_tokens.push_back({*name, *id});
  }
  items.insert(items.begin() + 1, TemplateProcessing::Item{true, "", 0});
  ASSIGN_OR_RETURN(stages->post_processor, TemplateProcessing::Create(items));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromVocabTxt(
    absl::string_view vocab, const VocabTxtOptions& options,
    absl::string_view what) {
  ASSIGN_OR_RETURN(std::vector<std::string> pieces, ReadPieces(vocab, what));
  PipelineTokenizer::Stages stages;
  stages.kind = "wordpiece";
  auto model = WordPiece::Create(std::move(pieces), options.wordpiece);
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", model.status().message()));
  }
  stages.model = *std::move(model);
  stages.normalizer = std::make_unique<BertNormalizer>(options.normalizer);
  stages.pre_tokenizer = std::make_unique<BertPreTokenizer>();
  RETURN_IF_ERROR(AddBertSpecials(options, *stages.model, what, &stages));
  return std::make_unique<PipelineTokenizer>(std::move(stages));
}

}  // namespace favor::tokenizer
