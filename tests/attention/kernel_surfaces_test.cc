// Every place outside the kernel table that names the kernels names each
// one of them: the API's comments (favor.proto, the client's attend.h), the
// docs' tables and the tools' --kernel help. The help texts are derived
// from the table; the comments and docs are written by hand and are what
// this test keeps from drifting when a kernel is added.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "server/attention/kernel.h"

namespace favor::attention {
namespace {

std::string ReadSource(const std::string& relative_path) {
  std::ifstream in(std::string(FAVOR_SOURCE_DIR) + "/" + relative_path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The standard output and error of `command`.
std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t read = 0;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    out.append(buffer, read);
  }
  pclose(pipe);
  return out;
}

// The text of `text` from the first `begin` to the next `end` after it.
std::string Between(const std::string& text, const std::string& begin,
                    const std::string& end) {
  const size_t start = text.find(begin);
  if (start == std::string::npos) return "";
  const size_t stop = text.find(end, start + begin.size());
  return text.substr(
      start, stop == std::string::npos ? std::string::npos : stop - start);
}

// Each kernel's name, quoted as `quote` name `quote`, occurs in `surface`.
void ExpectEveryKernelQuoted(const std::string& surface,
                             absl::string_view quote,
                             const std::string& where) {
  ASSERT_FALSE(surface.empty()) << where << " not found";
  for (const KernelTraits& kernel : AllKernels()) {
    const std::string quoted =
        std::string(quote) + std::string(kernel.name) + std::string(quote);
    EXPECT_THAT(surface, testing::HasSubstr(quoted))
        << where << " does not name kernel " << kernel.name;
  }
}

// Each kernel's name is a word of a help text's list ("a, b or c").
void ExpectEveryKernelListed(const std::string& help,
                             const std::string& where) {
  ASSERT_FALSE(help.empty()) << where << " not found";
  std::set<std::string> words;
  for (absl::string_view word :
       absl::StrSplit(help, absl::ByAnyChar(" ,;()\n"), absl::SkipEmpty())) {
    words.insert(std::string(word));
  }
  for (const KernelTraits& kernel : AllKernels()) {
    EXPECT_EQ(words.count(std::string(kernel.name)), 1u)
        << where << " does not list kernel " << kernel.name << ":\n"
        << help;
  }
}

TEST(KernelSurfacesTest, TheProtoNamesEveryKernel) {
  const std::string proto = ReadSource("proto/favor/v1/favor.proto");
  ExpectEveryKernelQuoted(
      Between(proto, "message AttendRequest", "string kernel = 4;"), "\"",
      "favor.proto's AttendRequest.kernel comment");
}

TEST(KernelSurfacesTest, TheClientHeaderNamesEveryKernel) {
  const std::string header = ReadSource("client/include/favor/attend.h");
  ExpectEveryKernelQuoted(
      Between(header, "struct AttendRequest", "std::string kernel;"), "\"",
      "attend.h's AttendRequest::kernel comment");
}

TEST(KernelSurfacesTest, TheDocsNameEveryKernel) {
  ExpectEveryKernelQuoted(
      Between(ReadSource("docs/attention.md"), "## Kernels", "\n## "), "`",
      "docs/attention.md's Kernels table");
  ExpectEveryKernelQuoted(
      Between(ReadSource("docs/models.md"), "| `kernel` |", "\n"), "`",
      "docs/models.md's `kernel` row");
}

TEST(KernelSurfacesTest, TheToolsHelpListsEveryKernel) {
  ExpectEveryKernelListed(
      Between(Output(std::string(FAVOR_CLI) + " --helpfull"), "--kernel",
              "default:"),
      "favor-cli --helpfull's --kernel");
  ExpectEveryKernelListed(
      Between(Output(std::string(FAVOR_MODEL) + " --helpfull"), "--kernel",
              "default:"),
      "favor-model --helpfull's --kernel");
}

}  // namespace
}  // namespace favor::attention
