// Tokenizers built from a file's bytes, one function per format; LoadTokenizer
// reads the file and calls these. `what` names the file in error messages.
#ifndef FAVOR_SERVER_TOKENIZER_TOKENIZER_BUILDERS_H_
#define FAVOR_SERVER_TOKENIZER_TOKENIZER_BUILDERS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/tokenizer/load_tokenizer.h"
#include "server/tokenizer/tokenizer.h"

namespace favor::tokenizer {

// With `max_vocab_size` > 0 (TokenizerSpec's), a file with more JSON values
// than a tokenizer of that many ids needs is refused while it is parsed.
absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromHuggingFaceJson(
    absl::string_view json, absl::string_view what, size_t max_vocab_size = 0);

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromVocabTxt(
    absl::string_view vocab, const VocabTxtOptions& options,
    absl::string_view what);

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromSentencePiece(
    const std::string& model, const SentencePieceOptions& options,
    absl::string_view what);

}  // namespace favor::tokenizer

#endif  // FAVOR_SERVER_TOKENIZER_TOKENIZER_BUILDERS_H_
