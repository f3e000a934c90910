// Text inputs for favor-bench: a corpus of documents (one per line of a
// file) cut into texts of a chosen length in tokens, as the model's own
// tokenizer counts them, so that a text run at "fixed:512" sends texts of
// 512 tokens whatever the prose.
//
// The token boundaries come from the server once, before the run
// (TokenizeCorpus: Tokenize calls within the model's limits). A cut of n
// tokens starts at a token drawn uniformly over the whole corpus and takes
// the next n content tokens, from the start byte of the first to the end
// byte of the last, going on into the next documents (joined by "\n",
// after the last comes the first again) when one ends. The model adds its
// special tokens to every text ([CLS] and [SEP]: framing_tokens()), so a
// text of L tokens is cut with L - framing_tokens() content tokens. A cut
// that starts inside a word ("##ing") may tokenise one token off; the
// server's own count (Embedding.num_tokens) is what the report counts.
#ifndef FAVOR_CLIENT_LOADGEN_TEXT_CORPUS_H_
#define FAVOR_CLIENT_LOADGEN_TEXT_CORPUS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/loadgen/random.h"
#include "favor/client.h"

namespace favor::bench {

class TextCorpus {
 public:
  // A document and the byte ranges [begin, end) of its content tokens.
  struct Document {
    std::string text;
    std::vector<std::pair<uint32_t, uint32_t>> tokens;
  };

  // The corpus of `documents` (those without a token are left out), whose
  // texts the model frames with `framing_tokens` special tokens.
  // INVALID_ARGUMENT when no document has a token.
  static absl::StatusOr<TextCorpus> Create(std::vector<Document> documents,
                                           int64_t framing_tokens);

  // A text of `content_tokens` (at least 1) consecutive tokens of the
  // corpus, starting at a random one.
  std::string Cut(int64_t content_tokens, Random& random) const;

  // Special tokens the model adds to every text.
  int64_t framing_tokens() const { return framing_tokens_; }
  // Content tokens over all documents.
  int64_t total_tokens() const { return first_token_.back(); }
  size_t num_documents() const { return documents_.size(); }

 private:
  TextCorpus() = default;

  std::vector<Document> documents_;
  // first_token_[d]: the corpus-wide index of document d's first token;
  // one more entry, the total.
  std::vector<int64_t> first_token_;
  int64_t framing_tokens_ = 0;
};

// The documents of a corpus file's text: its lines, without their
// surrounding whitespace, blank lines left out.
std::vector<std::string> SplitDocuments(absl::string_view text);

// The corpus of `documents` as `model`'s tokenizer splits them, through
// Tokenize calls on `client` that stay within the model's
// max_inputs_per_call and max_text_bytes_per_call. The call's failure as
// is (FAILED_PRECONDITION for a model without a tokenizer);
// INVALID_ARGUMENT naming the document when one alone is over the byte
// limit.
absl::StatusOr<TextCorpus> TokenizeCorpus(Client* client,
                                          const ModelInfo& model,
                                          std::vector<std::string> documents);

}  // namespace favor::bench

#endif  // FAVOR_CLIENT_LOADGEN_TEXT_CORPUS_H_
