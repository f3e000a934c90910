#include "client/loadgen/text_corpus.h"

#include <algorithm>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"

namespace favor::bench {
namespace {

// One past the last document of the Tokenize call that starts at `first`:
// as many as the model's limits allow (a limit of 0 is none), at least one.
absl::StatusOr<size_t> BatchEnd(const std::vector<std::string>& documents,
                                size_t first, const ModelLimits& limits) {
  const int64_t max_bytes = limits.max_text_bytes_per_call;
  if (max_bytes > 0 &&
      static_cast<int64_t>(documents[first].size()) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the corpus's non-blank line ", first + 1, " has ",
        documents[first].size(),
        " bytes, over the model's max_text_bytes_per_call of ", max_bytes));
  }
  const size_t max_inputs =
      limits.max_inputs_per_call > 0
          ? static_cast<size_t>(limits.max_inputs_per_call)
          : documents.size();
  int64_t bytes = 0;
  size_t end = first;
  while (end < documents.size() && end - first < max_inputs) {
    bytes += static_cast<int64_t>(documents[end].size());
    if (max_bytes > 0 && bytes > max_bytes) break;
    ++end;
  }
  return end;
}

// Appends the documents [first, first + texts.size()) with their content
// tokens; `*framing_tokens` becomes the special tokens of the last text.
absl::Status AddTokenized(const std::vector<TokenizedText>& texts,
                          std::vector<std::string>& documents, size_t first,
                          std::vector<TextCorpus::Document>* corpus,
                          int64_t* framing_tokens) {
  for (size_t i = 0; i < texts.size(); ++i) {
    const TokenizedText& text = texts[i];
    if (text.special.size() != text.ids.size() ||
        text.begin_offsets.size() != text.ids.size() ||
        text.end_offsets.size() != text.ids.size()) {
      return absl::InternalError(
          "Tokenize answered arrays of different lengths");
    }
    TextCorpus::Document document{std::move(documents[first + i]), {}};
    *framing_tokens = 0;
    for (size_t t = 0; t < text.ids.size(); ++t) {
      if (text.special[t]) {
        ++*framing_tokens;
      } else {
        document.tokens.emplace_back(text.begin_offsets[t],
                                     text.end_offsets[t]);
      }
    }
    corpus->push_back(std::move(document));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TextCorpus> TextCorpus::Create(std::vector<Document> documents,
                                              int64_t framing_tokens) {
  TextCorpus corpus;
  corpus.framing_tokens_ = framing_tokens;
  corpus.first_token_.push_back(0);
  for (Document& document : documents) {
    if (document.tokens.empty()) continue;
    corpus.first_token_.push_back(corpus.first_token_.back() +
                                  static_cast<int64_t>(document.tokens.size()));
    corpus.documents_.push_back(std::move(document));
  }
  if (corpus.documents_.empty()) {
    return absl::InvalidArgumentError("the corpus has no token");
  }
  return corpus;
}

std::string TextCorpus::Cut(int64_t content_tokens, Random& random) const {
  const int64_t start = random.UniformInt(0, total_tokens() - 1);
  // The document holding token `start`: the last whose first token is <= it.
  size_t d = static_cast<size_t>(
      std::upper_bound(first_token_.begin(), first_token_.end(), start) -
      first_token_.begin() - 1);
  size_t t = static_cast<size_t>(start - first_token_[d]);
  std::string text;
  for (int64_t left = std::max<int64_t>(content_tokens, 1); left > 0;) {
    const Document& document = documents_[d];
    const size_t take =
        std::min(static_cast<size_t>(left), document.tokens.size() - t);
    const uint32_t begin = document.tokens[t].first;
    const uint32_t end = document.tokens[t + take - 1].second;
    if (!text.empty()) text.push_back('\n');
    text.append(document.text, begin, end - begin);
    left -= static_cast<int64_t>(take);
    d = (d + 1) % documents_.size();
    t = 0;
  }
  return text;
}

std::vector<std::string> SplitDocuments(absl::string_view text) {
  std::vector<std::string> documents;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) documents.emplace_back(line);
  }
  return documents;
}

absl::StatusOr<TextCorpus> TokenizeCorpus(Client* client,
                                          const ModelInfo& model,
                                          std::vector<std::string> documents) {
  TokenizeOptions options;
  options.model = model.name;
  std::vector<TextCorpus::Document> corpus;
  int64_t framing_tokens = 0;
  for (size_t first = 0; first < documents.size();) {
    absl::StatusOr<size_t> end = BatchEnd(documents, first, model.limits);
    if (!end.ok()) return end.status();
    absl::StatusOr<TokenizeResult> tokenized = client->Tokenize(
        absl::MakeConstSpan(documents).subspan(first, *end - first), options);
    if (!tokenized.ok()) return tokenized.status();
    if (tokenized->texts.size() != *end - first) {
      return absl::InternalError(absl::StrCat("Tokenize answered ",
                                              tokenized->texts.size(),
                                              " texts for ", *end - first));
    }
    absl::Status added = AddTokenized(tokenized->texts, documents, first,
                                      &corpus, &framing_tokens);
    if (!added.ok()) return added;
    first = *end;
  }
  return TextCorpus::Create(std::move(corpus), framing_tokens);
}

}  // namespace favor::bench
