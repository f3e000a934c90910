// Reads the tables of docs/models.md, for tests that check the docs against
// the code they describe. FAVOR_SOURCE_DIR is set by tests/model's CMake.
#ifndef FAVOR_TESTS_MODEL_DOCS_TABLE_TEST_UTIL_H_
#define FAVOR_TESTS_MODEL_DOCS_TABLE_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace favor::model {

inline std::string ReadModelsDoc() {
  std::ifstream in(std::string(FAVOR_SOURCE_DIR) + "/docs/models.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The body rows (cells trimmed) of the `index`-th table after the line
// `heading`; empty when there is no such heading or table.
inline std::vector<std::vector<std::string>> MarkdownTable(
    const std::string& doc, absl::string_view heading, int index = 0) {
  std::vector<std::vector<std::string>> rows;
  bool after_heading = false, in_table = false;
  int table = -1;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (line == heading) after_heading = true;
    if (!after_heading) continue;
    const bool row = absl::StartsWith(line, "|");
    if (row && !in_table) ++table;
    in_table = row;
    if (table > index) break;
    if (!row || table < index) continue;
    std::vector<std::string> cells;
    for (absl::string_view cell : absl::StrSplit(line, '|')) {
      cells.emplace_back(absl::StripAsciiWhitespace(cell));
    }
    // "| a | b |" splits into "", "a", "b", "".
    cells = std::vector<std::string>(cells.begin() + 1, cells.end() - 1);
    rows.push_back(std::move(cells));
  }
  // The header row and the "| --- |" line.
  if (rows.size() >= 2) rows.erase(rows.begin(), rows.begin() + 2);
  return rows;
}

// The `code spans` of a cell, in order.
inline std::vector<std::string> CodeSpans(absl::string_view cell) {
  std::vector<std::string> spans;
  std::vector<absl::string_view> parts = absl::StrSplit(cell, '`');
  for (size_t i = 1; i < parts.size(); i += 2) spans.emplace_back(parts[i]);
  return spans;
}

}  // namespace favor::model

#endif  // FAVOR_TESTS_MODEL_DOCS_TABLE_TEST_UTIL_H_
