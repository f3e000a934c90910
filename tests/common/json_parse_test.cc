#include "server/common/json_parse.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

// Every kind of value, nested in objects and arrays both ways, with escapes,
// numbers of each of nlohmann's types and a key repeated at other levels.
constexpr char kDocument[] = R"({
  "a": [1, -2, 3.5, 1e300, 18446744073709551615, true, false, null,
        "s\u00e9\n", [], {}, [[{"a": [{"a": 1}]}]]],
  "b": {"a": {"b": "x", "c": [{"b": 1, "c": 2}, {"b": 3}]}, "d": ""},
  "": 0
})";

TEST(ParseJsonObjectTest, BuildsWhatNlohmannsOwnParserBuilds) {
  absl::StatusOr<Json> parsed = ParseJsonObject(kDocument, "doc");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, Json::parse(kDocument));
  EXPECT_EQ(parsed->dump(), Json::parse(kDocument).dump());
}

TEST(ParseJsonObjectTest, DuplicateKeysAreFoundAtEveryLevel) {
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {R"({"a": 1, "a": 2})", "duplicate key 'a' at the top level"},
      {R"({"a": {"b": 1, "c": 2, "b": 3}})", "duplicate key 'b' in 'a'"},
      {R"({"a": [{"b": {"c": 1, "c": 1}}]})", "duplicate key 'c' in 'a' > 'b'"},
      {R"({"a": [{"b": 1}, {"b": 2, "b": 2}]})", "duplicate key 'b' in 'a'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Json> parsed = ParseJsonObject(c.json, "doc");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << c.json;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message)) << c.json;
  }
  // The same key in sibling objects is no duplicate.
  EXPECT_TRUE(ParseJsonObject(R"({"a": [{"b": 1}, {"b": 2}], "c": {"b": 3}})",
                              "doc")
                  .ok());
}

TEST(ParseJsonObjectTest, ValuesAreCountedUpToTheLimit) {
  // kDocument's values: the root, and every value inside it.
  size_t values = 0;
  Json::parse(kDocument, [&](int, Json::parse_event_t event, Json&) {
    values += event == Json::parse_event_t::value ||
              event == Json::parse_event_t::object_start ||
              event == Json::parse_event_t::array_start;
    return true;
  });
  ASSERT_EQ(values, 30u);
  JsonParseOptions options;
  options.max_values = values;
  EXPECT_TRUE(ParseJsonObject(kDocument, "doc", options).ok());
  options.max_values = values - 1;
  options.max_values_reason = "a doc needs fewer";
  absl::StatusOr<Json> parsed = ParseJsonObject(kDocument, "doc", options);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "doc: more than 29 JSON values: a doc needs fewer");
}

TEST(ParseJsonObjectTest, ALongFlatObjectStopsAtTheLimit) {
  std::string json = "{";
  for (int i = 0; i < 100000; ++i) {
    absl::StrAppend(&json, i == 0 ? "" : ",", "\"k", i, "\":", i);
  }
  json += "}";
  JsonParseOptions options;
  options.max_values = 1000;
  EXPECT_THAT(ParseJsonObject(json, "big", options).status().message(),
              HasSubstr("more than 1000 JSON values"));
  absl::StatusOr<Json> all = ParseJsonObject(json, "big");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 100000u);
  EXPECT_EQ((*all)["k99999"], 99999);
}

TEST(ParseJsonObjectTest, NotJsonNotAnObjectAndTooDeepAreErrors) {
  EXPECT_THAT(ParseJsonObject("{\"a\": }", "doc").status().message(),
              HasSubstr("doc: not valid JSON"));
  EXPECT_THAT(ParseJsonObject("[1]", "doc").status().message(),
              HasSubstr("must be a JSON object, got array"));
  EXPECT_THAT(ParseJsonObject("{} {}", "doc").status().message(),
              HasSubstr("not valid JSON"));
  const std::string deep = absl::StrCat(
      "{\"a\":", std::string(kMaxJsonDepth, '['),
      std::string(kMaxJsonDepth, ']'), "}");
  EXPECT_THAT(ParseJsonObject(deep, "doc").status().message(),
              HasSubstr("nested deeper than 32 levels"));
  const std::string deepest = absl::StrCat(
      "{\"a\":", std::string(kMaxJsonDepth - 1, '['),
      std::string(kMaxJsonDepth - 1, ']'), "}");
  EXPECT_TRUE(ParseJsonObject(deepest, "doc").ok());
}

}  // namespace
}  // namespace favor
