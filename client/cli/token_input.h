// Token id sequences for `favor-cli embed`, from the three places a user
// gives them:
//  - arguments: each argument is one input, its ids separated by commas
//    and/or spaces ("101,2023,102" or "101 2023 102");
//  - a file, or stdin: one input per line, each line either a JSON array of
//    ids ([101, 2023, 102]), a JSON object with a "token_ids" array
//    ({"token_ids": [101, 2023, 102]}, JSON lines), or plain ids as in an
//    argument. Blank lines and lines starting with '#' are skipped.
// Ids must be integers in [0, 2^32); the server checks them against the
// model's vocabulary. An input with no id is refused here, as the server
// would refuse it.
#ifndef FAVOR_CLIENT_CLI_TOKEN_INPUT_H_
#define FAVOR_CLIENT_CLI_TOKEN_INPUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "favor/embed.h"

namespace favor::cli {

// One input per argument; INVALID_ARGUMENT naming the argument's index and
// the bad id.
absl::StatusOr<std::vector<TokenIds>> ParseTokenArguments(
    const std::vector<std::string>& arguments);

// One input per non-blank line of `text`; INVALID_ARGUMENT naming `source`
// (a path or "stdin") and the line number.
absl::StatusOr<std::vector<TokenIds>> ParseTokenLines(absl::string_view text,
                                                      absl::string_view source);

// The file at `path` ("-" is stdin) through ParseTokenLines; NOT_FOUND when
// it cannot be read.
absl::StatusOr<std::vector<TokenIds>> ReadTokenFile(const std::string& path);

}  // namespace favor::cli

#endif  // FAVOR_CLIENT_CLI_TOKEN_INPUT_H_
