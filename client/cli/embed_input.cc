#include "client/cli/embed_input.h"

#include <cstdint>
#include <iostream>
#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/cli/read_file.h"
#include "nlohmann/json.hpp"

namespace favor::cli {
namespace {

constexpr char kJsonForms[] =
    "want a JSON array of ids, a string, or an object with \"token_ids\" or "
    "\"text\"";

// Ids separated by commas and/or whitespace. `where` names the input in
// errors.
absl::StatusOr<TokenIds> ParsePlainIds(absl::string_view text,
                                       absl::string_view where) {
  // Ids apart by whitespace, a comma, or both ("1 2", "1,2", "1, 2"); a
  // comma with no id on one side ("1,,2", ",1", "1,") is an error.
  const std::string spaced = absl::StrReplaceAll(text, {{",", " , "}});
  TokenIds ids;
  bool after_comma = true;  // at the start, an id must come first as well
  for (absl::string_view word : absl::StrSplit(
           spaced, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty())) {
    if (word == ",") {
      if (after_comma) break;  // refused below
      after_comma = true;
      continue;
    }
    uint32_t id = 0;
    if (!absl::SimpleAtoi(word, &id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": '", word, "' is not a token id (an integer in [0, 2^32))"));
    }
    ids.push_back(id);
    after_comma = false;
  }
  if (after_comma && absl::StrContains(text, ',')) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": '", text, "' has a comma with no token id on one side"));
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

// `input`, unless it has neither ids nor text.
absl::StatusOr<EmbedInput> NotEmpty(absl::StatusOr<EmbedInput> input,
                                    absl::string_view where) {
  if (!input.ok() || !input->token_ids.empty() || !input->text.empty()) {
    return input;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": empty input (no token id and no text)"));
}

bool StartsWithDigit(absl::string_view text) {
  text = absl::StripLeadingAsciiWhitespace(text);
  return !text.empty() && absl::ascii_isdigit(text.front());
}

// A plain argument or line, as `plain` says.
absl::StatusOr<EmbedInput> ParsePlainInput(absl::string_view text,
                                           absl::string_view where,
                                           PlainInput plain) {
  if (plain == PlainInput::kText ||
      (plain == PlainInput::kAuto && !StartsWithDigit(text))) {
    return EmbedInput(text);
  }
  absl::StatusOr<TokenIds> ids = ParsePlainIds(text, where);
  if (!ids.ok() && plain == PlainInput::kAuto) {
    return absl::InvalidArgumentError(absl::StrCat(
        ids.status().message(),
        "; an input that starts with a digit is read as token ids: give "
        "--text to read it as text"));
  }
  if (!ids.ok()) return ids.status();
  return EmbedInput(*std::move(ids));
}

absl::StatusOr<int64_t> SpanBound(const nlohmann::json& value,
                                  absl::string_view where) {
  if (!value.is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": span bound ", value.dump(), " is not an integer"));
  }
  return value.get<int64_t>();
}

// "spans": [[begin, end], ...] or [{"begin": b, "end": e}, ...].
absl::StatusOr<std::vector<InputSpan>> SpansFromJson(
    const nlohmann::json& spans, absl::string_view where) {
  if (!spans.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"spans\" must be an array"));
  }
  std::vector<InputSpan> parsed;
  for (const nlohmann::json& span : spans) {
    const bool pair = span.is_array() && span.size() == 2;
    const bool object =
        span.is_object() && span.contains("begin") && span.contains("end");
    if (!pair && !object) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": span ", span.dump(),
                       " is neither [begin, end] nor {\"begin\", \"end\"}"));
    }
    absl::StatusOr<int64_t> begin =
        SpanBound(pair ? span[0] : span["begin"], where);
    if (!begin.ok()) return begin.status();
    absl::StatusOr<int64_t> end =
        SpanBound(pair ? span[1] : span["end"], where);
    if (!end.ok()) return end.status();
    parsed.push_back({*begin, *end});
  }
  return parsed;
}

// The text or ids of a JSON line, spans aside.
absl::StatusOr<EmbedInput> InputFromJson(const nlohmann::json& json,
                                         absl::string_view where) {
  if (json.is_string()) return EmbedInput(json.get<std::string>());
  if (json.is_array()) {
    absl::StatusOr<TokenIds> ids = IdsFromJsonArray(json, where);
    if (!ids.ok()) return ids.status();
    return EmbedInput(*std::move(ids));
  }
  if (!json.is_object() ||
      json.contains("text") == json.contains("token_ids")) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", kJsonForms));
  }
  if (json.contains("text")) {
    if (!json["text"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"text\" must be a string"));
    }
    return EmbedInput(json["text"].get<std::string>());
  }
  if (!json["token_ids"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"token_ids\" must be an array"));
  }
  absl::StatusOr<TokenIds> ids = IdsFromJsonArray(json["token_ids"], where);
  if (!ids.ok()) return ids.status();
  return EmbedInput(*std::move(ids));
}

absl::StatusOr<EmbedInput> ParseJsonInput(absl::string_view line,
                                          absl::string_view where) {
  const nlohmann::json json =
      nlohmann::json::parse(line.begin(), line.end(), nullptr,
                            /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": not valid JSON"));
  }
  absl::StatusOr<EmbedInput> input = InputFromJson(json, where);
  if (!input.ok() || !json.is_object() || !json.contains("spans")) {
    return input;
  }
  absl::StatusOr<std::vector<InputSpan>> spans =
      SpansFromJson(json["spans"], where);
  if (!spans.ok()) return spans.status();
  input->spans = *std::move(spans);
  return input;
}

// One line of a file: JSON when it starts like JSON, plain otherwise.
absl::StatusOr<EmbedInput> ParseLine(absl::string_view line,
                                     absl::string_view where,
                                     PlainInput plain) {
  const bool json =
      line.front() == '[' || line.front() == '{' || line.front() == '"';
  return NotEmpty(
      json ? ParseJsonInput(line, where) : ParsePlainInput(line, where, plain),
      where);
}

// The ids of an input that must be token ids.
absl::StatusOr<TokenIds> IdsOnly(absl::StatusOr<EmbedInput> input,
                                 absl::string_view where) {
  if (!input.ok()) return input.status();
  if (input->token_ids.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": want token ids, not text"));
  }
  return std::move(input->token_ids);
}

// `parse(argument, "input argument <i>")` for each argument.
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParseEachArgument(
    const std::vector<std::string>& arguments, Parse parse) {
  std::vector<T> inputs;
  for (size_t i = 0; i < arguments.size(); ++i) {
    absl::StatusOr<T> input =
        parse(arguments[i], absl::StrCat("input argument ", i));
    if (!input.ok()) return input.status();
    inputs.push_back(*std::move(input));
  }
  return inputs;
}

// `parse(line, "<source> line <n>")` for each line that is neither blank
// nor a comment, stripped of surrounding whitespace.
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParseEachLine(absl::string_view text,
                                             absl::string_view source,
                                             Parse parse) {
  std::vector<T> inputs;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    absl::StatusOr<T> input =
        parse(line, absl::StrCat(source, " line ", line_number));
    if (!input.ok()) return input.status();
    inputs.push_back(*std::move(input));
  }
  return inputs;
}

}  // namespace

absl::StatusOr<std::vector<EmbedInput>> ParseInputArguments(
    const std::vector<std::string>& arguments, PlainInput plain) {
  return ParseEachArgument<EmbedInput>(
      arguments, [plain](absl::string_view argument, const std::string& where) {
        return NotEmpty(ParsePlainInput(argument, where, plain), where);
      });
}

absl::StatusOr<std::vector<EmbedInput>> ParseInputLines(
    absl::string_view text, absl::string_view source, PlainInput plain) {
  return ParseEachLine<EmbedInput>(
      text, source, [plain](absl::string_view line, const std::string& where) {
        return ParseLine(line, where, plain);
      });
}

absl::StatusOr<std::vector<EmbedInput>> ReadInputFile(const std::string& path,
                                                      PlainInput plain) {
  std::string source;
  absl::StatusOr<std::string> text = ReadInputText(path, &source);
  if (!text.ok()) return text.status();
  return ParseInputLines(*text, source, plain);
}

absl::StatusOr<std::vector<InputSpan>> ParseSpans(absl::string_view spec) {
  std::vector<InputSpan> spans;
  for (absl::string_view span : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> bounds =
        absl::StrSplit(span, absl::MaxSplits(':', 1));
    InputSpan parsed;
    if (!absl::SimpleAtoi(bounds.first, &parsed.begin) ||
        !absl::SimpleAtoi(bounds.second, &parsed.end)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--spans: '", span, "' is not BEGIN:END (two integers)"));
    }
    spans.push_back(parsed);
  }
  return spans;
}

absl::StatusOr<std::vector<TokenIds>> ParseTokenArguments(
    const std::vector<std::string>& arguments) {
  return ParseEachArgument<TokenIds>(
      arguments, [](absl::string_view argument, const std::string& where) {
        return IdsOnly(
            NotEmpty(ParsePlainInput(argument, where, PlainInput::kIds), where),
            where);
      });
}

absl::StatusOr<std::vector<TokenIds>> ParseTokenLines(
    absl::string_view text, absl::string_view source) {
  return ParseEachLine<TokenIds>(
      text, source, [](absl::string_view line, const std::string& where) {
        return IdsOnly(ParseLine(line, where, PlainInput::kIds), where);
      });
}

absl::StatusOr<std::vector<TokenIds>> ReadTokenFile(const std::string& path) {
  std::string source;
  absl::StatusOr<std::string> text = ReadInputText(path, &source);
  if (!text.ok()) return text.status();
  return ParseTokenLines(*text, source);
}

absl::StatusOr<std::string> ReadInputText(const std::string& path,
                                          std::string* source) {
  if (path == "-") {
    *source = "stdin";
    return std::string(std::istreambuf_iterator<char>(std::cin),
                       std::istreambuf_iterator<char>{});
  }
  *source = path;
  return ReadFile(path);
}

}  // namespace favor::cli
