#include "server/common/request_id.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace favor {
namespace {

constexpr absl::string_view kTraceparent =
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(RequestIdTest, VisibleAsciiUpToTheBoundIsKept) {
  EXPECT_TRUE(CheckRequestId("a").ok());
  EXPECT_TRUE(CheckRequestId(std::string(kMaxRequestIdBytes, '~')).ok());
  EXPECT_TRUE(CheckRequestId("!\"#{}|/=").ok());
  for (const std::string& bad :
       {std::string(), std::string(kMaxRequestIdBytes + 1, 'a'),
        std::string("a b"), std::string("a\tb"), std::string("a\x7f"),
        std::string("caf\xc3\xa9"), std::string("a\nb")}) {
    EXPECT_EQ(CheckRequestId(bad).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(RequestIdTest, NewIdsAre32HexDigitsAndDiffer) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewRequestId();
    ASSERT_EQ(id.size(), 32);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000);
}

// W3C Trace Context, section 3.2 (traceparent) and its examples.
TEST(TraceparentTest, TheRecommendationsGrammar) {
  EXPECT_TRUE(IsValidTraceparent(kTraceparent));
  EXPECT_TRUE(IsValidTraceparent(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
  // A later version may append fields after a '-'.
  EXPECT_TRUE(IsValidTraceparent(
      "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever"));
  for (absl::string_view bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
       }) {
    EXPECT_FALSE(IsValidTraceparent(bad)) << bad;
  }
}

TEST(ReadCallIdsTest, KeepsMakesRefusesAndIgnores) {
  CallIds kept = ReadCallIds({"abc"}, {kTraceparent});
  EXPECT_TRUE(kept.status.ok());
  EXPECT_EQ(kept.request_id, "abc");
  EXPECT_EQ(kept.traceparent, kTraceparent);

  CallIds made = ReadCallIds({}, {});
  EXPECT_TRUE(made.status.ok());
  EXPECT_EQ(made.request_id.size(), 32);
  EXPECT_EQ(made.traceparent, "");

  // Malformed but within the bound: ignored, as W3C asks.
  CallIds ignored = ReadCallIds({"abc"}, {"not a traceparent"});
  EXPECT_TRUE(ignored.status.ok());
  EXPECT_EQ(ignored.traceparent, "");

  const std::string long_id(kMaxRequestIdBytes + 1, 'a');
  const std::string long_trace(kMaxTraceparentBytes + 1, 'a');
  for (const CallIds& refused :
       {ReadCallIds({long_id}, {}), ReadCallIds({"a b"}, {}),
        ReadCallIds({"a", "b"}, {}), ReadCallIds({}, {long_trace}),
        ReadCallIds({"abc"}, {kTraceparent, kTraceparent})}) {
    EXPECT_EQ(refused.status.code(), absl::StatusCode::kInvalidArgument);
    // A fresh id, never the refused one, so that the answer can carry it.
    EXPECT_TRUE(CheckRequestId(refused.request_id).ok());
    EXPECT_NE(refused.request_id, long_id);
    EXPECT_EQ(refused.traceparent, "");
  }
  EXPECT_EQ(ReadCallIds({"abc"}, {long_trace}).request_id, "abc");
}

}  // namespace
}  // namespace favor
