// The parsers of tokenizer.json's stages (internal to the loader,
// hf_tokenizer_json.cc). Each refuses a "type" or a field it does not
// implement with INVALID_ARGUMENT naming the file (`what`), the stage and
// the type, rather than tokenising differently from Hugging Face.
#ifndef FAVOR_SERVER_TOKENIZER_TOKENIZER_JSON_STAGES_H_
#define FAVOR_SERVER_TOKENIZER_TOKENIZER_JSON_STAGES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/model.h"
#include "server/tokenizer/normalizer.h"
#include "server/tokenizer/pipeline_tokenizer.h"
#include "server/tokenizer/pre_tokenizer.h"
#include "server/tokenizer/tokenizer_json_fields.h"

namespace favor::tokenizer::tokenizer_json {

// "normalizer": null gives nullptr.
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(
    const Json& root, absl::string_view what);

struct ParsedPreTokenizer {
  std::unique_ptr<PreTokenizer> stage;  // nullptr for null
  // A ByteLevel pre-tokenizer is in it: the model reads bytes in GPT-2's
  // alphabet.
  bool byte_level = false;
};
absl::StatusOr<ParsedPreTokenizer> ParsePreTokenizer(const Json& root,
                                                     absl::string_view what);

// Sets stages->post_processor (nullptr for null) and adds the special
// tokens it places to stages->extra_special_tokens.
absl::Status ParsePostProcessor(const Json& root, absl::string_view what,
                                PipelineTokenizer::Stages* stages);

// The model; *kind is what Tokenizer::kind() reports ("wordpiece", "bpe",
// "unigram"). `byte_level`: the pre-tokenizer is ByteLevel (only a BPE
// model may follow it).
absl::StatusOr<std::unique_ptr<Model>> ParseModel(const Json& root,
                                                  absl::string_view what,
                                                  bool byte_level,
                                                  std::string* kind);

}  // namespace favor::tokenizer::tokenizer_json

#endif  // FAVOR_SERVER_TOKENIZER_TOKENIZER_JSON_STAGES_H_
