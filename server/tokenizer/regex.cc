// The PCRE2 adapter behind regex.h.
#include "server/tokenizer/regex.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/tokenizer/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace favor::tokenizer {
namespace {

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) {
    return absl::StrCat("PCRE2 error ", code);
  }
  return reinterpret_cast<const char*>(buffer);
}

absl::Status Refuse(absl::string_view pattern, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("Regex pattern \"", pattern, "\" ", why));
}

// What an escape means to Oniguruma, written for PCRE2, outside a class
// and inside one; "" inside: refused there (a negated set inside a class
// has no PCRE2 spelling without class subtraction).
struct EscapeRewrite {
  char letter;
  const char* outside;
  const char* inside;
};
// Unicode's White_Space, which Oniguruma's \s is (PCRE2's leaves out U+0085
// and takes U+180E).
#define FAVOR_WHITE_SPACE                                                \
  "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}" \
  "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
constexpr EscapeRewrite kEscapeRewrites[] = {
    {'s', "[" FAVOR_WHITE_SPACE "]", FAVOR_WHITE_SPACE},
    {'S', "[^" FAVOR_WHITE_SPACE "]", ""},
    {'w', "[\\p{L}\\p{M}\\p{N}\\p{Pc}]", "\\p{L}\\p{M}\\p{N}\\p{Pc}"},
    {'W', "[^\\p{L}\\p{M}\\p{N}\\p{Pc}]", ""},
    {'h', "[0-9a-fA-F]", "0-9a-fA-F"},
    {'H', "[^0-9a-fA-F]", ""},
};
#undef FAVOR_WHITE_SPACE

// Copies the escape at pattern[*pos] ('\\') to *out, rewritten where
// Oniguruma and PCRE2 read it differently.
absl::Status CopyEscape(absl::string_view pattern, bool in_class, size_t* pos,
                        std::string* out) {
  const char letter = pattern[*pos + 1];
  for (const EscapeRewrite& rewrite : kEscapeRewrites) {
    if (rewrite.letter != letter) continue;
    const absl::string_view spelled =
        in_class ? rewrite.inside : rewrite.outside;
    if (spelled.empty()) {
      return Refuse(pattern, absl::StrCat("has \\", std::string(1, letter),
                                          " inside a character class, which "
                                          "PCRE2 cannot spell as Oniguruma "
                                          "reads it"));
    }
    out->append(spelled.data(), spelled.size());
    *pos += 2;
    return absl::OkStatus();
  }
  // Ruby's \uHHHH is PCRE2's \x{HHHH}.
  if (letter == 'u' && *pos + 6 <= pattern.size()) {
    absl::StrAppend(out, "\\x{", pattern.substr(*pos + 2, 4), "}");
    *pos += 6;
    return absl::OkStatus();
  }
  out->push_back('\\');
  size_t next = *pos + 1;
  NextChar(pattern, &next);  // the escaped character, whole
  out->append(pattern.data() + *pos + 1, next - *pos - 1);
  *pos = next;
  return absl::OkStatus();
}

// Copies the group opening "(?" at pattern[*pos] to *out; an inline option
// group ((?m), (?i-m:...)) has Ruby's m (dot matches newline) spelled s.
void CopyGroupOpening(absl::string_view pattern, size_t* pos,
                      std::string* out) {
  size_t end = *pos + 2;
  while (end < pattern.size() && absl::string_view("imx-").find(pattern[end]) !=
                                     absl::string_view::npos) {
    ++end;
  }
  const bool options = end > *pos + 2 && end < pattern.size() &&
                       (pattern[end] == ':' || pattern[end] == ')');
  for (size_t i = *pos; i < end; ++i) {
    out->push_back(options && i >= *pos + 2 && pattern[i] == 'm' ? 's'
                                                                 : pattern[i]);
  }
  *pos = end;
}

// Copies a character class opening at pattern[*pos] ('['): a leading '^'
// and a leading ']' (a literal in both dialects) with it.
void CopyClassOpening(absl::string_view pattern, size_t* pos,
                      std::string* out) {
  size_t end = *pos + 1;
  if (end < pattern.size() && pattern[end] == '^') ++end;
  if (end < pattern.size() && pattern[end] == ']') ++end;
  out->append(pattern.data() + *pos, end - *pos);
  *pos = end;
}

// Inside a class: copies a POSIX bracket ([:alpha:]) at pattern[*pos];
// any other '[' opens an Oniguruma nested class, refused.
absl::Status CopyClassBracket(absl::string_view pattern, size_t* pos,
                              std::string* out) {
  const size_t close = pattern.find(":]", *pos + 2);
  if (pattern.substr(*pos, 2) != "[:" || close == absl::string_view::npos) {
    return Refuse(pattern,
                  "nests a character class, which only Oniguruma "
                  "has");
  }
  out->append(pattern.data() + *pos, close + 2 - *pos);
  *pos = close + 2;
  return absl::OkStatus();
}

// The pattern in PCRE2's syntax, meaning what it means to Oniguruma
// (regex.h lists the differences).
absl::StatusOr<std::string> ToPcre2Syntax(absl::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  bool in_class = false;
  size_t pos = 0;
  while (pos < pattern.size()) {
    const char c = pattern[pos];
    const char next = pos + 1 < pattern.size() ? pattern[pos + 1] : '\0';
    if (c == '\\' && next != '\0') {
      if (auto copied = CopyEscape(pattern, in_class, &pos, &out);
          !copied.ok()) {
        return copied;
      }
    } else if (!in_class && c == '[') {
      CopyClassOpening(pattern, &pos, &out);
      in_class = true;
    } else if (!in_class && c == '(' && next == '?') {
      CopyGroupOpening(pattern, &pos, &out);
    } else if (in_class && c == '[') {
      if (auto copied = CopyClassBracket(pattern, &pos, &out); !copied.ok()) {
        return copied;
      }
    } else if (in_class && c == '&' && next == '&') {
      return Refuse(pattern,
                    "intersects classes (&&), which only Oniguruma "
                    "has");
    } else {
      if (in_class && c == ']') in_class = false;
      out.push_back(c);
      ++pos;
    }
  }
  return out;
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct CompileContextDeleter {
  void operator()(pcre2_compile_context* context) const {
    pcre2_compile_context_free(context);
  }
};
struct MatchContextDeleter {
  void operator()(pcre2_match_context* context) const {
    pcre2_match_context_free(context);
  }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

// Shared read-only by every search: PCRE2 allows one code and one match
// context to serve many threads as long as neither changes.
struct Regex::Compiled {
  std::unique_ptr<pcre2_code, CodeDeleter> code;
  std::unique_ptr<pcre2_match_context, MatchContextDeleter> match_context;
  Options options;
};

namespace {

absl::StatusOr<std::unique_ptr<Regex::Compiled>> CompilePcre2(
    absl::string_view shown, absl::string_view source, uint32_t flags,
    const Regex::Options& options) {
  std::unique_ptr<pcre2_compile_context, CompileContextDeleter> context(
      pcre2_compile_context_create(nullptr));
  if (context == nullptr)
    return absl::ResourceExhaustedError("PCRE2: no memory");
  pcre2_set_newline(context.get(), PCRE2_NEWLINE_LF);
  pcre2_set_bsr(context.get(), PCRE2_BSR_UNICODE);
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto compiled = std::make_unique<Regex::Compiled>();
  compiled->code.reset(
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                    flags, &error, &offset, context.get()));
  if (compiled->code == nullptr) {
    return Refuse(shown, absl::StrCat("does not compile: ", Pcre2Message(error),
                                      " (at byte ", offset, " of \"", source,
                                      "\" as PCRE2 reads it)"));
  }
  compiled->match_context.reset(pcre2_match_context_create(nullptr));
  if (compiled->match_context == nullptr) {
    return absl::ResourceExhaustedError("PCRE2: no memory");
  }
  pcre2_set_match_limit(compiled->match_context.get(), options.match_limit);
  pcre2_set_heap_limit(compiled->match_context.get(), options.heap_limit_kib);
  compiled->options = options;
  return compiled;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Regex>> Regex::Compile(absl::string_view pattern,
                                                      const Options& options) {
  const absl::Status utf8 = ValidateUtf8(pattern, "Regex pattern");
  if (!utf8.ok()) return utf8;
  absl::StatusOr<std::string> source = ToPcre2Syntax(pattern);
  if (!source.ok()) return source.status();
  auto compiled = CompilePcre2(
      pattern, *source,
      PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C,
      options);
  if (!compiled.ok()) return compiled.status();
  return std::unique_ptr<Regex>(
      new Regex(std::string(pattern), *std::move(compiled)));
}

absl::StatusOr<std::unique_ptr<Regex>> Regex::CompileLiteral(
    absl::string_view literal, const Options& options) {
  const absl::Status utf8 = ValidateUtf8(literal, "String pattern");
  if (!utf8.ok()) return utf8;
  if (literal.empty()) {
    return absl::InvalidArgumentError("the String pattern is empty");
  }
  auto compiled =
      CompilePcre2(literal, literal, PCRE2_UTF | PCRE2_LITERAL, options);
  if (!compiled.ok()) return compiled.status();
  return std::unique_ptr<Regex>(
      new Regex(std::string(literal), *std::move(compiled)));
}

Regex::Regex(std::string pattern, std::unique_ptr<Compiled> compiled)
    : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}

Regex::~Regex() = default;

absl::Status Regex::FindAll(absl::string_view text,
                            std::vector<ByteRange>* matches) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
      pcre2_match_data_create_from_pattern(compiled_->code.get(), nullptr));
  if (data == nullptr) return absl::ResourceExhaustedError("PCRE2: no memory");
  const auto* subject =
      reinterpret_cast<PCRE2_SPTR>(text.empty() ? "" : text.data());
  size_t search_from = 0;
  bool matched_before = false;
  size_t last_match_end = 0;
  while (search_from <= text.size()) {
    const int found = pcre2_match(compiled_->code.get(), subject, text.size(),
                                  search_from, PCRE2_NO_UTF_CHECK, data.get(),
                                  compiled_->match_context.get());
    if (found == PCRE2_ERROR_NOMATCH) break;
    if (found < 0) {
      const bool limit = found == PCRE2_ERROR_MATCHLIMIT ||
                         found == PCRE2_ERROR_HEAPLIMIT ||
                         found == PCRE2_ERROR_DEPTHLIMIT;
      return absl::InvalidArgumentError(absl::StrCat(
          "text: Regex pattern \"", pattern_, "\" ",
          limit ? absl::StrCat("reached its limit (",
                               compiled_->options.match_limit, " steps, ",
                               compiled_->options.heap_limit_kib,
                               " KiB) searching from byte ")
                : "failed searching from byte ",
          search_from, " of the normalized text: ", Pcre2Message(found)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    // Oniguruma's find_iter: no empty match where the last match ended;
    // search again one character on.
    if (begin == end && matched_before && end == last_match_end) {
      if (search_from >= text.size()) break;
      NextChar(text, &search_from);
      continue;
    }
    matches->push_back(
        {static_cast<uint32_t>(begin), static_cast<uint32_t>(end)});
    matched_before = true;
    last_match_end = end;
    search_from = end;
  }
  return absl::OkStatus();
}

}  // namespace favor::tokenizer
