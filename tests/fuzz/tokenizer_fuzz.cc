// Fuzz target: the tokenizer loaders (server/tokenizer/tokenizer_builders.h:
// tokenizer.json, vocab.txt, SentencePiece .model) on arbitrary file bytes,
// and every tokenizer that loads on arbitrary text. An input is
//   <text, in FuzzedDataProvider's escaped form> <file bytes> <format byte>
// (tests/fuzz/make_seeds.py writes the seeds), so that mutations of the
// text keep a valid tokenizer valid. An encoding must hold together: ids in
// the vocabulary, one token and span per id, spans inside the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzzer/FuzzedDataProvider.h"
#include "server/tokenizer/tokenizer_builders.h"

namespace {

namespace tk = favor::tokenizer;

void Require(bool condition) {
  if (!condition) std::abort();
}

absl::StatusOr<std::unique_ptr<tk::Tokenizer>> Load(int format,
                                                    const std::string& file) {
  switch (format) {
    case 0:
      return tk::TokenizerFromHuggingFaceJson(file, "tokenizer.json");
    case 1:
      return tk::TokenizerFromVocabTxt(file, tk::VocabTxtOptions(),
                                       "vocab.txt");
    default:
      return tk::TokenizerFromSentencePiece(file, tk::SentencePieceOptions(),
                                            "spm.model");
  }
}

void CheckEncoding(const tk::Tokenizer& tokenizer, const std::string& text,
                   const tk::Encoding& encoding) {
  Require(encoding.tokens.size() == encoding.ids.size());
  Require(encoding.spans.size() == encoding.ids.size());
  for (size_t i = 0; i < encoding.ids.size(); ++i) {
    Require(encoding.ids[i] >= 0 &&
            static_cast<size_t>(encoding.ids[i]) < tokenizer.vocab_size());
    Require(encoding.spans[i].begin <= encoding.spans[i].end &&
            encoding.spans[i].end <= text.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const int format = provider.ConsumeIntegralInRange(0, 2);
  const std::string text = provider.ConsumeRandomLengthString(4096);
  const std::string file = provider.ConsumeRemainingBytesAsString();
  auto tokenizer = Load(format, file);
  if (!tokenizer.ok()) return 0;
  for (const bool special : {true, false}) {
    tk::EncodeOptions options;
    options.add_special_tokens = special;
    auto encoding = (*tokenizer)->Encode(text, options);
    if (encoding.ok()) CheckEncoding(**tokenizer, text, *encoding);
  }
  tk::EncodeOptions short_options;
  short_options.max_tokens = 3;
  auto truncated = (*tokenizer)->Encode(text, short_options);
  if (truncated.ok()) {
    Require(truncated->size() <= 3);
    CheckEncoding(**tokenizer, text, *truncated);
  }
  return 0;
}
