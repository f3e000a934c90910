// What Tokenize answers (tokenize_texts.h): each text's encoding, and no
// more tokens in all than a call may have, refused with exact counts.
#include "server/service/tokenize_texts.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::testing::HasSubstr;

// A text over what is left of the call's tokens is counted, never held: a
// 16 MiB text does not build a 16-million-token encoding to be refused.
TEST(TokenizeTextsTest, EncodesNoMoreThanTheCallMayAnswer) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "the cat ";  // 2000 tokens, 2002 framed
  for (const bool without_special_tokens : {false, true}) {
    SCOPED_TRACE(without_special_tokens ? "without special tokens" : "framed");
    testing::HeldTokensTokenizer watched(testing::SmallVocabTokenizer());
    v1::TokenizeRequest request;
    request.set_without_special_tokens(without_special_tokens);
    request.add_texts("the cat sat");  // 3 tokens, 5 framed
    request.add_texts(text);
    v1::TokenizeResponse response;
    const absl::Status over = TokenizeTexts(request, watched, 50, &response);
    EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(over.message(),
                HasSubstr(without_special_tokens
                              ? "texts[0..1] have 2003 tokens, over the 50"
                              : "texts[0..1] have 2007 tokens, over the 50"));
    EXPECT_EQ(response.texts_size(), 0);
    EXPECT_LE(watched.most_held(), 4u * 50);
  }
  // Within the limit, every token is answered.
  testing::HeldTokensTokenizer watched(testing::SmallVocabTokenizer());
  v1::TokenizeRequest request;
  request.add_texts("the cat sat");
  request.add_texts("the mat");
  v1::TokenizeResponse response;
  ASSERT_TRUE(TokenizeTexts(request, watched, 9, &response).ok());
  ASSERT_EQ(response.texts_size(), 2);
  EXPECT_EQ(response.texts(0).ids_size(), 5);
  EXPECT_EQ(response.texts(1).ids_size(), 4);
  // One token more than is left is refused.
  EXPECT_THAT(TokenizeTexts(request, watched, 8, &response).message(),
              HasSubstr("texts[0..1] have 9 tokens, over the 8"));
}

}  // namespace
}  // namespace favor::service
