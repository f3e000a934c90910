// Reading the parity corpora (corpus.txt format: "#" comment lines, one JSON
// string literal a line) and the reference files (one JSON object a line).
#ifndef FAVOR_TESTS_TOKENIZER_CORPUS_H_
#define FAVOR_TESTS_TOKENIZER_CORPUS_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace favor::tokenizer::testing {

// The non-comment lines of a file, split on '\n' only (never at U+2028).
inline std::vector<std::string> ReadDataLines(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(bytes.str(), '\n')) {
    if (!line.empty() && line[0] != '#') lines.emplace_back(line);
  }
  return lines;
}

inline std::vector<std::string> ReadCorpus(const std::string& path) {
  std::vector<std::string> strings;
  for (const std::string& line : ReadDataLines(path)) {
    strings.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return strings;
}

inline std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> values;
  for (const std::string& line : ReadDataLines(path)) {
    values.push_back(nlohmann::json::parse(line));
  }
  return values;
}

}  // namespace favor::tokenizer::testing

#endif  // FAVOR_TESTS_TOKENIZER_CORPUS_H_
