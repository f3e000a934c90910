#include "server/tokenizer/load_tokenizer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/tokenizer/tokenizer_builders.h"

namespace favor::tokenizer {
namespace {

// The file's bytes, refusing anything but a regular file of at most
// max_bytes (checked before reading, and again while reading in case the
// file grows).
absl::StatusOr<std::string> ReadBoundedFile(const std::string& path,
                                            size_t max_bytes) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const std::string reason = std::strerror(errno);
    if (errno == ENOENT || errno == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat("tokenizer file ", path, " not found: ", reason));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer file ", path, ": ", reason));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer file ", path, " is not a regular file"));
  }
  const auto too_large = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer file ", path, " has over ", max_bytes,
                     " bytes (the tokenizer's max_file_bytes)"));
  };
  if (static_cast<uint64_t>(info.st_size) > max_bytes) return too_large();
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer file ", path, " cannot be opened"));
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  file.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(file.gcount()));
  if (file.peek() != std::ifstream::traits_type::eof()) return too_large();
  return bytes;
}

}  // namespace

absl::string_view NameOf(TokenizerFormat format) {
  switch (format) {
    case TokenizerFormat::kTokenizerJson:
      return "tokenizer.json";
    case TokenizerFormat::kVocabTxt:
      return "vocab.txt";
    case TokenizerFormat::kSentencePiece:
      return "sentencepiece";
  }
  return "unknown";
}

absl::StatusOr<TokenizerFormat> ParseTokenizerFormat(absl::string_view name) {
  for (const TokenizerFormat format :
       {TokenizerFormat::kTokenizerJson, TokenizerFormat::kVocabTxt,
        TokenizerFormat::kSentencePiece}) {
    if (name == NameOf(format)) return format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown tokenizer format \"", name,
                   "\"; expected tokenizer.json, vocab.txt or sentencepiece"));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(
    const TokenizerSpec& spec) {
  ASSIGN_OR_RETURN(const std::string bytes,
                   ReadBoundedFile(spec.path, spec.max_file_bytes));
  const auto too_many_ids = [&](size_t ids) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.path, ": the tokenizer has ", ids,
        " token ids, more than the model's vocab_size (", spec.max_vocab_size,
        "): its ids must all be below vocab_size"));
  };
  absl::StatusOr<std::unique_ptr<Tokenizer>> loaded =
      absl::InvalidArgumentError("unknown tokenizer format");
  switch (spec.format) {
    case TokenizerFormat::kTokenizerJson:
      loaded = TokenizerFromHuggingFaceJson(bytes, spec.path,
                                            spec.max_vocab_size);
      break;
    case TokenizerFormat::kVocabTxt: {
      // A piece a line, the last newline optional: counted before the
      // pieces are built.
      const size_t pieces =
          static_cast<size_t>(std::count(bytes.begin(), bytes.end(), '\n')) +
          (bytes.empty() || bytes.back() != '\n' ? 1 : 0);
      if (spec.max_vocab_size > 0 && pieces > spec.max_vocab_size) {
        return too_many_ids(pieces);
      }
      loaded = TokenizerFromVocabTxt(bytes, spec.vocab_txt, spec.path);
      break;
    }
    case TokenizerFormat::kSentencePiece:
      loaded =
          TokenizerFromSentencePiece(bytes, spec.sentencepiece, spec.path);
      break;
  }
  if (!loaded.ok()) return loaded.status();
  const size_t ids = (*loaded)->vocab_size();
  if (spec.max_vocab_size > 0 && ids > spec.max_vocab_size) {
    return too_many_ids(ids);
  }
  return loaded;
}

}  // namespace favor::tokenizer
