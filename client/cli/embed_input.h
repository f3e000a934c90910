// The inputs of `favor-cli embed`, from the places a user gives them:
//  - arguments: each argument is one input, text or token ids;
//  - a file, or stdin: one input per line. A line that starts with '[',
//    '{' or '"' is JSON: an array of ids ([101, 2023, 102]), a string
//    ("some text"), or an object with "token_ids" (an array) or "text" (a
//    string) and, in either, optional "spans" ([[0, 5], [6, 11]] or
//    [{"begin": 0, "end": 5}]). Any other line is plain, read like an
//    argument (without its leading and trailing whitespace). Blank lines and
//    lines starting with '#' are skipped (give such a text as JSON).
// A plain argument or line is token ids or text as PlainInput says; ids are
// separated by commas and/or spaces ("101,2023,102" or "101 2023 102") and
// must be integers in [0, 2^32), which the server checks against the
// model's vocabulary. An input with no id, or empty text, is refused here,
// as the server would refuse it.
#ifndef FAVOR_CLIENT_CLI_EMBED_INPUT_H_
#define FAVOR_CLIENT_CLI_EMBED_INPUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "favor/embed.h"

namespace favor::cli {

// How a plain argument or line (one that is not JSON) is read.
enum class PlainInput {
  // Token ids when its first non-blank character is an ASCII digit
  // ("101,2023,102"), text otherwise ("a sentence"). Unambiguous for the
  // tool, and each way has a flag to force it (--text, --ids) for text that
  // starts with a digit.
  kAuto,
  kText,
  kIds,
};

// One input per argument; INVALID_ARGUMENT naming the argument's index and
// what is wrong with it.
absl::StatusOr<std::vector<EmbedInput>> ParseInputArguments(
    const std::vector<std::string>& arguments, PlainInput plain);

// One input per non-blank, non-comment line of `text`; INVALID_ARGUMENT
// naming `source` (a path or "stdin") and the line number.
absl::StatusOr<std::vector<EmbedInput>> ParseInputLines(
    absl::string_view text, absl::string_view source, PlainInput plain);

// The file at `path` ("-" is stdin) through ParseInputLines; NOT_FOUND when
// it cannot be read.
absl::StatusOr<std::vector<EmbedInput>> ReadInputFile(const std::string& path,
                                                      PlainInput plain);

// Spans as the --spans flag gives them: "BEGIN:END,BEGIN:END,..." (bytes of
// a text, positions of token ids); INVALID_ARGUMENT naming the bad one. The
// server checks them against each input.
absl::StatusOr<std::vector<InputSpan>> ParseSpans(absl::string_view spec);

// The id-only forms: every plain argument or line is token ids, and a JSON
// line must be an array of ids or {"token_ids": [...]}.
absl::StatusOr<std::vector<TokenIds>> ParseTokenArguments(
    const std::vector<std::string>& arguments);
absl::StatusOr<std::vector<TokenIds>> ParseTokenLines(absl::string_view text,
                                                      absl::string_view source);
absl::StatusOr<std::vector<TokenIds>> ReadTokenFile(const std::string& path);

// The whole file at `path` ("-" is stdin); NOT_FOUND when it cannot be
// read. `*source` becomes its name in errors ("stdin" or the path).
absl::StatusOr<std::string> ReadInputText(const std::string& path,
                                          std::string* source);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_EMBED_INPUT_H_
