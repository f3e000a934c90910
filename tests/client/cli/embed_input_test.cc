#include "client/cli/embed_input.h"

#include <cstdio>
#include <fstream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(TokenInputTest, EachArgumentIsOneInput) {
  auto inputs = ParseTokenArguments({"101,2023,102", "7 8  9", "5"});
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{101, 2023, 102}, TokenIds{7, 8, 9},
                                   TokenIds{5}));
}

TEST(TokenInputTest, ArgumentsWithBadIdsNameTheArgument) {
  for (const char* bad : {"1,x,3", "-1", "1.5", "4294967296"}) {
    auto inputs = ParseTokenArguments({"1", bad});
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(inputs.status().message(), HasSubstr("input argument 1"));
  }
  auto empty = ParseTokenArguments({" , "});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("no token id"));
}

// A comma needs an id on each side: "101,,102" must not embed as [101, 102].
TEST(TokenInputTest, ACommaWithNoIdOnOneSideIsAnError) {
  for (const char* bad : {"101,,102", "101,102,", ",101", "1, ,2"}) {
    auto inputs = ParseTokenArguments({bad});
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(inputs.status().message(),
                HasSubstr("a comma with no token id on one side"))
        << bad;
  }
  auto spaced = ParseTokenArguments({"1, 2 ,3 4"});
  ASSERT_TRUE(spaced.ok()) << spaced.status();
  EXPECT_THAT(*spaced, ElementsAre(TokenIds{1, 2, 3, 4}));
}

TEST(TokenInputTest, IdsUpToTwoToTheThirtyTwo) {
  auto inputs = ParseTokenArguments({"0,4294967295"});
  ASSERT_TRUE(inputs.ok());
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{0, 4294967295u}));
}

TEST(TokenInputTest, LinesMayBeJsonArraysObjectsOrPlainIds) {
  auto inputs = ParseTokenLines(
      "# a comment\n"
      "[101, 2023, 102]\n"
      "\n"
      "{\"token_ids\": [1, 2], \"id\": \"ignored\"}\n"
      "  3,4 5  \r\n",
      "stdin");
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{101, 2023, 102}, TokenIds{1, 2},
                                   TokenIds{3, 4, 5}));
}

TEST(TokenInputTest, BadLinesNameTheSourceAndLine) {
  const char* bad_lines[] = {
      "[1, -2]",     "[1, 2.5]", "[1, \"2\"]",          "{\"ids\": [1]}",
      "[1, 2",       "[]",       "{\"token_ids\": []}", "1 two",
      "[4294967296]"};
  for (const char* bad : bad_lines) {
    auto inputs = ParseTokenLines(std::string("[1]\n\n") + bad + "\n", "f.txt");
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(inputs.status().message(), HasSubstr("f.txt line 3")) << bad;
  }
}

TEST(TokenInputTest, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/tokens.jsonl";
  {
    std::ofstream file(path);
    file << "[1,2,3]\n{\"token_ids\":[4]}\n";
  }
  auto inputs = ReadTokenFile(path);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(*inputs, ElementsAre(TokenIds{1, 2, 3}, TokenIds{4}));
  std::remove(path.c_str());
  auto missing = ReadTokenFile(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
}

// What an input holds, for matching: its text or ids, and its spans.
struct Held {
  std::string text;
  TokenIds token_ids;
  std::vector<std::pair<int64_t, int64_t>> spans;
  bool operator==(const Held& other) const {
    return text == other.text && token_ids == other.token_ids &&
           spans == other.spans;
  }
  friend std::ostream& operator<<(std::ostream& out, const Held& held) {
    out << "text '" << held.text << "', " << held.token_ids.size()
        << " ids, spans";
    for (const auto& [begin, end] : held.spans) {
      out << " " << begin << ":" << end;
    }
    return out;
  }
};

std::vector<Held> HeldBy(const std::vector<EmbedInput>& inputs) {
  std::vector<Held> held;
  for (const EmbedInput& input : inputs) {
    Held one{input.text, input.token_ids, {}};
    for (const InputSpan& span : input.spans) {
      one.spans.emplace_back(span.begin, span.end);
    }
    held.push_back(one);
  }
  return held;
}

Held Text(std::string text) { return {std::move(text), {}, {}}; }
Held Ids(TokenIds ids) { return {"", std::move(ids), {}}; }

TEST(EmbedInputTest, ArgumentsStartingWithADigitAreIdsTheOthersText) {
  auto inputs = ParseInputArguments(
      {"101,2023,102", "a sentence", " 7 8", "[CLS] 5"}, PlainInput::kAuto);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(HeldBy(*inputs),
              ElementsAre(Ids({101, 2023, 102}), Text("a sentence"),
                          Ids({7, 8}), Text("[CLS] 5")));
}

TEST(EmbedInputTest, TextAndIdsModesReadEveryArgumentOneWay) {
  auto text = ParseInputArguments({"3 little pigs", "42"}, PlainInput::kText);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(HeldBy(*text), ElementsAre(Text("3 little pigs"), Text("42")));
  auto ids = ParseInputArguments({"1", "hello"}, PlainInput::kIds);
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ids.status().message(),
              HasSubstr("input argument 1: 'hello' is not a token id"));
  EXPECT_THAT(ids.status().message(), Not(HasSubstr("--text")));
}

TEST(EmbedInputTest, TextStartingWithADigitPointsToTheTextFlag) {
  auto inputs = ParseInputArguments({"3 little pigs"}, PlainInput::kAuto);
  EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(inputs.status().message(),
              HasSubstr("input argument 0: 'little' is not a token id"));
  EXPECT_THAT(inputs.status().message(), HasSubstr("give --text"));
}

TEST(EmbedInputTest, AnEmptyArgumentIsRefused) {
  for (PlainInput plain : {PlainInput::kAuto, PlainInput::kText}) {
    auto inputs = ParseInputArguments({"a", ""}, plain);
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(inputs.status().message(),
                HasSubstr("input argument 1: empty input"));
  }
}

TEST(EmbedInputTest, LinesMayBeTextIdsAndSpansInJsonOrPlain) {
  auto inputs = ParseInputLines(
      "\"a JSON string\"\n"
      "{\"text\": \"hello world\", \"spans\": [[0, 5], "
      "{\"begin\": 6, \"end\": 11}]}\n"
      "{\"token_ids\": [1, 2, 3], \"spans\": [[0, 2]]}\n"
      "[4, 5]\n"
      "  plain text, trimmed \r\n"
      "6 7\n",
      "stdin", PlainInput::kAuto);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(HeldBy(*inputs),
              ElementsAre(Text("a JSON string"),
                          Held{"hello world", {}, {{0, 5}, {6, 11}}},
                          Held{"", {1, 2, 3}, {{0, 2}}}, Ids({4, 5}),
                          Text("plain text, trimmed"), Ids({6, 7})));
  auto text = ParseInputLines("6 7\n", "stdin", PlainInput::kText);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(HeldBy(*text), ElementsAre(Text("6 7")));
}

TEST(EmbedInputTest, BadJsonLinesNameTheSourceAndLine) {
  const char* bad_lines[] = {"{\"text\": 5}",
                             "{\"text\": \"a\", \"token_ids\": [1]}",
                             "{\"text\": \"\"}",
                             "\"\"",
                             "{\"text\": \"a\", \"spans\": 3}",
                             "{\"text\": \"a\", \"spans\": [[1]]}",
                             "{\"text\": \"a\", \"spans\": [[\"0\", 1]]}",
                             "{\"text\": \"a\", \"spans\": [{\"begin\": 0}]}",
                             "{\"token_ids\": \"1 2\"}",
                             "\"unterminated"};
  for (const char* bad : bad_lines) {
    auto inputs = ParseInputLines(std::string("a\n\n") + bad + "\n", "f.txt",
                                  PlainInput::kAuto);
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(inputs.status().message(), HasSubstr("f.txt line 3")) << bad;
  }
}

TEST(EmbedInputTest, IdOnlyFormsRefuseText) {
  for (const char* text : {"\"words\"", "{\"text\": \"words\"}", "words"}) {
    auto inputs = ParseTokenLines(std::string("[1]\n") + text, "f.txt");
    EXPECT_EQ(inputs.status().code(), absl::StatusCode::kInvalidArgument)
        << text;
    EXPECT_THAT(inputs.status().message(), HasSubstr("f.txt line 2")) << text;
  }
}

TEST(EmbedInputTest, SpansFlag) {
  auto spans = ParseSpans("0:5,6:11");
  ASSERT_TRUE(spans.ok()) << spans.status();
  ASSERT_EQ(spans->size(), 2u);
  EXPECT_EQ((*spans)[1].begin, 6);
  EXPECT_EQ((*spans)[1].end, 11);
  for (const char* bad : {"0-5", "a:b", "1:", "0:5,7", "1:2:3"}) {
    auto parsed = ParseSpans(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("--spans")) << bad;
  }
}

TEST(EmbedInputTest, ReadsTextFromAFile) {
  const std::string path = ::testing::TempDir() + "/texts.jsonl";
  {
    std::ofstream file(path);
    file << "{\"text\": \"first\"}\nsecond line\n";
  }
  auto inputs = ReadInputFile(path, PlainInput::kAuto);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_THAT(HeldBy(*inputs), ElementsAre(Text("first"), Text("second line")));
  std::remove(path.c_str());
  EXPECT_EQ(ReadInputFile(path, PlainInput::kAuto).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace favor::cli
