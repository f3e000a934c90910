#include "server/tokenizer/encoding.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace favor::tokenizer {
namespace {

// Token t has id t and span [2t, 2t + 1).
void AppendTokens(int count, TruncatingAppender* appender,
                  const Encoding& encoding, size_t* most_held) {
  for (int t = 0; t < count; ++t) {
    const size_t begin = 2 * static_cast<size_t>(t);
    appender->Append(t, "x", {begin, begin + 1}, false);
    *most_held = std::max(*most_held, encoding.size());
  }
}

std::vector<int32_t> Range(int32_t begin, int32_t end) {
  std::vector<int32_t> ids;
  for (int32_t id = begin; id < end; ++id) ids.push_back(id);
  return ids;
}

struct Case {
  size_t max_tokens;
  TruncationSide side;
  int count;
};

// The appender keeps what truncating the whole encoding would keep, counts
// the rest, and never holds more than twice what it keeps (the exact
// reference: the first or last `budget` of `count` tokens).
TEST(TruncatingAppenderTest, KeepsWhatTruncatingTheWholeWouldAndCountsTheRest) {
  const size_t special = 2;
  for (const Case& c : std::vector<Case>{
           {0, TruncationSide::kRight, 50},   // no truncation
           {0, TruncationSide::kLeft, 50},
           {2, TruncationSide::kRight, 50},   // room for no text at all
           {2, TruncationSide::kLeft, 50},
           {7, TruncationSide::kRight, 3},    // shorter than the budget
           {7, TruncationSide::kLeft, 5},     // exactly the budget
           {7, TruncationSide::kRight, 1000},
           {7, TruncationSide::kLeft, 1000},  // 1000 = 200 budgets
           {7, TruncationSide::kLeft, 1003},
           {7, TruncationSide::kLeft, 10},    // exactly twice the budget
           {3, TruncationSide::kLeft, 999},   // budget 1
       }) {
    SCOPED_TRACE(testing::Message() << "max_tokens " << c.max_tokens
                                    << (c.side == TruncationSide::kLeft
                                            ? " left, "
                                            : " right, ")
                                    << c.count << " tokens");
    EncodeOptions options;
    options.max_tokens = c.max_tokens;
    options.truncation_side = c.side;
    Encoding encoding;
    TruncatingAppender appender(options, special, &encoding);
    size_t most_held = 0;
    AppendTokens(c.count, &appender, encoding, &most_held);
    appender.Finish();
    const int budget =
        c.max_tokens == 0 ? c.count : static_cast<int>(c.max_tokens - special);
    const int kept = std::min(budget, c.count);
    const int first = c.side == TruncationSide::kLeft ? c.count - kept : 0;
    EXPECT_EQ(encoding.ids, Range(first, first + kept));
    ASSERT_EQ(encoding.spans.size(), static_cast<size_t>(kept));
    ASSERT_EQ(encoding.tokens.size(), static_cast<size_t>(kept));
    ASSERT_EQ(encoding.special_tokens_mask.size(), static_cast<size_t>(kept));
    if (kept > 0) {
      EXPECT_EQ(encoding.spans.front().begin, 2 * static_cast<size_t>(first));
      EXPECT_EQ(encoding.spans.back().end,
                2 * static_cast<size_t>(first + kept - 1) + 1);
    }
    EXPECT_EQ(encoding.num_truncated_tokens,
              static_cast<size_t>(c.count - kept));
    // Held at most: the budget keeping the first; under twice the budget
    // keeping the last; everything without truncation.
    const size_t held_bound =
        c.max_tokens == 0                  ? static_cast<size_t>(c.count)
        : c.side == TruncationSide::kRight ? static_cast<size_t>(budget)
                                           : std::max(2 * budget - 1, 0);
    EXPECT_LE(most_held, held_bound);
  }
}

TEST(TruncatingAppenderTest, TooSmallForTheSpecialTokensIsAnError) {
  EncodeOptions options;
  options.max_tokens = 1;
  EXPECT_EQ(CheckTruncation(options, 2).code(),
            absl::StatusCode::kInvalidArgument);
  options.max_tokens = 2;
  EXPECT_TRUE(CheckTruncation(options, 2).ok());
}

}  // namespace
}  // namespace favor::tokenizer
