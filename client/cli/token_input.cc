#include "client/cli/token_input.h"

#include <cstdint>
#include <iostream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli/read_file.h"
#include "nlohmann/json.hpp"

namespace favor::cli {
namespace {

// Ids separated by commas and/or whitespace. `where` names the input in
// errors.
absl::StatusOr<TokenIds> ParsePlainIds(absl::string_view text,
                                       absl::string_view where) {
  TokenIds ids;
  for (absl::string_view word :
       absl::StrSplit(text, absl::ByAnyChar(", \t\r\n"), absl::SkipEmpty())) {
    uint32_t id = 0;
    if (!absl::SimpleAtoi(word, &id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": '", word, "' is not a token id (an integer in [0, 2^32))"));
    }
    ids.push_back(id);
  }
  return ids;
}

absl::StatusOr<TokenIds> IdsFromJsonArray(const nlohmann::json& array,
                                          absl::string_view where) {
  TokenIds ids;
  for (const nlohmann::json& value : array) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() > UINT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", value.dump(),
                       " is not a token id (an integer in [0, 2^32))"));
    }
    ids.push_back(static_cast<uint32_t>(value.get<uint64_t>()));
  }
  return ids;
}

absl::StatusOr<TokenIds> ParseJsonIds(absl::string_view line,
                                      absl::string_view where) {
  const nlohmann::json json =
      nlohmann::json::parse(line.begin(), line.end(), nullptr,
                            /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": not valid JSON"));
  }
  if (json.is_array()) return IdsFromJsonArray(json, where);
  if (json.is_object() && json.contains("token_ids") &&
      json["token_ids"].is_array()) {
    return IdsFromJsonArray(json["token_ids"], where);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": want a JSON array of ids or {\"token_ids\": [...]}"));
}

absl::Status CheckNotEmpty(const TokenIds& ids, absl::string_view where) {
  if (!ids.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": no token id (an input needs at least one)"));
}

}  // namespace

absl::StatusOr<std::vector<TokenIds>> ParseTokenArguments(
    const std::vector<std::string>& arguments) {
  std::vector<TokenIds> inputs;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string where = absl::StrCat("input argument ", i);
    absl::StatusOr<TokenIds> ids = ParsePlainIds(arguments[i], where);
    if (!ids.ok()) return ids.status();
    absl::Status status = CheckNotEmpty(*ids, where);
    if (!status.ok()) return status;
    inputs.push_back(*std::move(ids));
  }
  return inputs;
}

absl::StatusOr<std::vector<TokenIds>> ParseTokenLines(
    absl::string_view text, absl::string_view source) {
  std::vector<TokenIds> inputs;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = absl::StrCat(source, " line ", line_number);
    absl::StatusOr<TokenIds> ids = line.front() == '[' || line.front() == '{'
                                       ? ParseJsonIds(line, where)
                                       : ParsePlainIds(line, where);
    if (!ids.ok()) return ids.status();
    absl::Status status = CheckNotEmpty(*ids, where);
    if (!status.ok()) return status;
    inputs.push_back(*std::move(ids));
  }
  return inputs;
}

absl::StatusOr<std::vector<TokenIds>> ReadTokenFile(const std::string& path) {
  if (path == "-") {
    const std::string text(std::istreambuf_iterator<char>(std::cin),
                           std::istreambuf_iterator<char>{});
    return ParseTokenLines(text, "stdin");
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseTokenLines(*text, path);
}

}  // namespace favor::cli
