#include "client/cli/flag_parsing.h"

#include <algorithm>
#include <map>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace favor::cli {
namespace {

// The flag `name` stands for, and the value a bare --name or --noname
// gives a bool flag; nullptr when there is none.
absl::CommandLineFlag* FindFlag(absl::string_view name,
                                std::string* bool_value) {
  if (absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name)) {
    if (flag->IsOfType<bool>()) *bool_value = "true";
    return flag;
  }
  if (absl::ConsumePrefix(&name, "no")) {
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && flag->IsOfType<bool>()) {
      *bool_value = "false";
      return flag;
    }
  }
  return nullptr;
}

// Parses argv[*index], a flag, consuming its value from argv[*index + 1]
// when it is written as a separate argument.
absl::Status ParseOneFlag(int argc, char** argv, int* index) {
  absl::string_view argument = argv[*index];
  absl::string_view name = argument;
  if (!absl::ConsumePrefix(&name, "--")) absl::ConsumePrefix(&name, "-");
  const size_t equals = name.find('=');
  const bool has_value = equals != absl::string_view::npos;
  absl::string_view value;
  if (has_value) {
    value = name.substr(equals + 1);
    name = name.substr(0, equals);
  }
  std::string bool_value;
  absl::CommandLineFlag* flag = FindFlag(name, &bool_value);
  if (flag == nullptr || flag->IsRetired()) {
    return UsageError(absl::StrCat("unknown flag '", argument, "'"));
  }
  if (!has_value) {
    if (!bool_value.empty()) {
      value = bool_value;
    } else if (*index + 1 < argc) {
      value = argv[++*index];
    } else {
      return UsageError(absl::StrCat("flag '", argument, "' needs a value"));
    }
  } else if (!bool_value.empty() && bool_value == "false") {
    return UsageError(absl::StrCat("flag '", argument, "' takes no value"));
  }
  std::string error;
  if (!flag->ParseFrom(value, &error)) {
    return UsageError(absl::StrCat("bad value '", value, "' for --",
                                   flag->Name(), ": ", error));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status UsageError(absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(message, " (see --help)"));
}

absl::StatusOr<ParsedCommandLine> ParseFlags(int argc, char** argv) {
  ParsedCommandLine parsed;
  bool flags_ended = false;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view argument = argv[i];
    if (flags_ended || argument == "-" || !absl::StartsWith(argument, "-")) {
      parsed.positional.emplace_back(argument);
    } else if (argument == "--") {
      flags_ended = true;
    } else if (argument == "--help" || argument == "-h" ||
               argument == "--helpfull" || argument == "-help") {
      parsed.help = true;
    } else {
      absl::Status status = ParseOneFlag(argc, argv, &i);
      if (!status.ok()) return status;
    }
  }
  return parsed;
}

std::string FlagsUsage(absl::string_view flags_file_suffix) {
  return FlagsUsage(absl::Span<const absl::string_view>(&flags_file_suffix, 1));
}

std::string FlagsUsage(
    absl::Span<const absl::string_view> flags_file_suffixes) {
  std::map<std::string, const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const bool listed =
        std::any_of(flags_file_suffixes.begin(), flags_file_suffixes.end(),
                    [&](absl::string_view suffix) {
                      // absl strips an absolute __FILE__'s leading '/' from
                      // Filename(); strip it from the suffix too.
                      const size_t start = suffix.find_first_not_of('/');
                      if (start == absl::string_view::npos) return false;
                      return absl::EndsWith(flag->Filename(),
                                            suffix.substr(start));
                    });
    if (!flag->IsRetired() && listed) flags[std::string(name)] = flag;
  }
  std::string usage = absl::StrCat(absl::ProgramUsageMessage(), "\n\nFlags:\n");
  for (const auto& [name, flag] : flags) {
    absl::StrAppend(
        &usage, "  --", name, "  ", flag->Help(), "\n      default: ",
        flag->DefaultValue().empty() ? "\"\"" : flag->DefaultValue(), "\n");
  }
  return usage;
}

}  // namespace favor::cli
