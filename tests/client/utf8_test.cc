// The client's UTF-8 check of texts (src/utf8.h): what protobuf will parse
// passes, anything else is INVALID_ARGUMENT naming the text, the bad byte
// and its offset.
#include "utf8.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::client_internal {
namespace {

using ::testing::HasSubstr;

TEST(Utf8Test, ValidTextPasses) {
  for (const char* text :
       {"", "plain ASCII", "caf\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87",
        "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb", "NUL\0inside"}) {
    EXPECT_TRUE(CheckUtf8(text, "t").ok()) << text;
  }
  EXPECT_TRUE(CheckUtf8(std::string("a\0b", 3), "t").ok());
}

TEST(Utf8Test, InvalidTextNamesTheByteAndItsOffset) {
  struct Case {
    std::string text;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"ab\xff"
       "cd",
       "t is not valid UTF-8: invalid byte 0xff at byte offset 2"},
      {"ab\xe2\x82", "invalid byte 0xe2 at byte offset 2"},  // cut short
      {"\xc0\xaf", "invalid byte 0xc0 at byte offset 0"},    // overlong '/'
      {"ok \xed\xa0\x80", "invalid byte 0xed at byte offset 3"},   // surrogate
      {"\xf4\x90\x80\x80", "invalid byte 0xf4 at byte offset 0"},  // > U+10FFFF
      {"\x80", "invalid byte 0x80 at byte offset 0"},  // lone continuation
  };
  for (const Case& c : cases) {
    const absl::Status status = CheckUtf8(c.text, "t");
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(Utf8Test, InputsAndTextsAreNamedByIndex) {
  const std::vector<EmbedInput> inputs = {
      EmbedInput("fine"), EmbedInput(TokenIds{1, 2}), EmbedInput("bad \xff")};
  EXPECT_THAT(std::string(CheckInputTexts(inputs).message()),
              HasSubstr("inputs[2].text is not valid UTF-8"));
  EXPECT_TRUE(CheckInputTexts({inputs[0], inputs[1]}).ok());
  const std::vector<std::string> texts = {"fine", "\xc3"};
  EXPECT_THAT(std::string(CheckTexts(texts).message()),
              HasSubstr("texts[1] is not valid UTF-8: invalid byte 0xc3 at "
                        "byte offset 0"));
}

}  // namespace
}  // namespace favor::client_internal
