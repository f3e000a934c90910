// The conversions between the client's plain types and favor.v1 messages
// (src/convert.h) for the text API: EmbedInput's text, ids and spans, the
// new EmbedOptions fields (embedding_types too), span embeddings and chunk
// counts, quantised embeddings, Tokenize both
// ways, and the tokenizer and text limits of ModelInfo. Each field is set to
// a value of its own, so that a field copied into the wrong place shows.
#include "convert.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/proto_test_util.h"

namespace favor::client_internal {
namespace {

using ::testing::ElementsAre;

using ::favor::testing::ExpectProtoEq;
using ::favor::testing::ParseText;

TEST(ConvertTest, EmbedInputsCarryTextIdsAndSpans) {
  const std::vector<EmbedInput> inputs = {
      EmbedInput("hello world", {{0, 5}, {6, 11}}),
      EmbedInput(TokenIds{101, 7, 102}, {{1, 2}}),
      EmbedInput(std::string("plain")),
  };
  EmbedOptions options;
  options.model = "m";
  options.truncation = Truncation::kChunk;
  options.dimensions = 64;
  options.chunk_overlap_tokens = 32;
  options.embedding_types = {EmbeddingType::kUbinary, EmbeddingType::kFloat,
                             EmbeddingType::kInt8, EmbeddingType::kUint8,
                             EmbeddingType::kBinary};
  v1::EmbedRequest proto;
  ToProto(inputs, options, &proto);
  ExpectProtoEq(proto, ParseText<v1::EmbedRequest>(R"pb(
                  model: "m"
                  inputs {
                    text: "hello world"
                    spans { begin: 0 end: 5 }
                    spans { begin: 6 end: 11 }
                  }
                  inputs {
                    token_ids: [ 101, 7, 102 ]
                    spans { begin: 1 end: 2 }
                  }
                  inputs { text: "plain" }
                  pooling: POOLING_UNSPECIFIED
                  normalization: NORMALIZATION_UNSPECIFIED
                  truncation: TRUNCATION_CHUNK
                  token_embeddings_dtype: DTYPE_FLOAT32
                  priority: PRIORITY_NORMAL
                  dimensions: 64
                  chunk_overlap_tokens: 32
                  embedding_types: [
                    EMBEDDING_TYPE_UBINARY,
                    EMBEDDING_TYPE_FLOAT,
                    EMBEDDING_TYPE_INT8,
                    EMBEDDING_TYPE_UINT8,
                    EMBEDDING_TYPE_BINARY
                  ]
                )pb"));
}

TEST(ConvertTest, TokenIdSequencesBecomeIdInputs) {
  const std::vector<EmbedInput> inputs =
      ToEmbedInputs(std::vector<TokenIds>{{1, 2}, {3}});
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_THAT(inputs[0].token_ids, ElementsAre(1u, 2u));
  EXPECT_THAT(inputs[1].token_ids, ElementsAre(3u));
  for (const EmbedInput& input : inputs) {
    EXPECT_EQ(input.text, "");
    EXPECT_TRUE(input.spans.empty());
  }
}

TEST(ConvertTest, EmbeddingsCarrySpansAndChunks) {
  const EmbedResult result = FromProto(ParseText<v1::EmbedResponse>(R"pb(
    model: "m"
    embeddings {
      values: [ 1, 2 ]
      num_tokens: 9
      spans {
        values: [ 0.5, 0.25 ]
        num_tokens: 3
      }
      spans {
        values: [ -1, 4 ]
        num_tokens: 4
        quantized { int8: "\377" }
      }
      quantized {
        int8: "\001\377"
        uint8: "\002\376"
        binary: "\200"
        ubinary: "\300"
      }
    }
    embeddings {
      values: [ 3, 4 ]
      num_tokens: 1000
      num_chunks: 3
    }
  )pb"));
  ASSERT_EQ(result.embeddings.size(), 2u);
  const Embedding& spanned = result.embeddings[0];
  ASSERT_EQ(spanned.spans.size(), 2u);
  EXPECT_THAT(spanned.spans[0].values, ElementsAre(0.5f, 0.25f));
  EXPECT_EQ(spanned.spans[0].num_tokens, 3);
  EXPECT_THAT(spanned.spans[1].values, ElementsAre(-1.0f, 4.0f));
  EXPECT_EQ(spanned.spans[1].num_tokens, 4);
  EXPECT_EQ(spanned.num_chunks, 0);
  EXPECT_TRUE(result.embeddings[1].spans.empty());
  EXPECT_EQ(result.embeddings[1].num_chunks, 3);
  // Each quantised form in its own field, signed or not.
  EXPECT_THAT(spanned.quantized.int8, ElementsAre(1, -1));
  EXPECT_THAT(spanned.quantized.uint8, ElementsAre(2, 254));
  EXPECT_THAT(spanned.quantized.binary, ElementsAre(-128));
  EXPECT_THAT(spanned.quantized.ubinary, ElementsAre(192));
  EXPECT_TRUE(spanned.spans[0].quantized.int8.empty());
  EXPECT_THAT(spanned.spans[1].quantized.int8, ElementsAre(-1));
  EXPECT_TRUE(result.embeddings[1].quantized.uint8.empty());
}

TEST(ConvertTest, TokenizeRequest) {
  TokenizeOptions options;
  options.model = "bert";
  options.without_special_tokens = true;
  v1::TokenizeRequest proto;
  ToProto(std::vector<std::string>{"one", "two words"}, options, &proto);
  ExpectProtoEq(proto, ParseText<v1::TokenizeRequest>(R"pb(
                  model: "bert"
                  texts: [ "one", "two words" ]
                  without_special_tokens: true
                )pb"));
}

TEST(ConvertTest, TokenizeResponse) {
  const TokenizeResult result = FromProto(ParseText<v1::TokenizeResponse>(R"pb(
    model: "bert"
    texts {
      ids: [ 101, 7592, 102 ]
      tokens: [ "[CLS]", "hello", "[SEP]" ]
      begin_offsets: [ 0, 0, 0 ]
      end_offsets: [ 0, 5, 0 ]
      special: [ true, false, true ]
    }
    texts {}
  )pb"));
  EXPECT_EQ(result.model, "bert");
  ASSERT_EQ(result.texts.size(), 2u);
  const TokenizedText& text = result.texts[0];
  EXPECT_THAT(text.ids, ElementsAre(101u, 7592u, 102u));
  EXPECT_THAT(text.tokens, ElementsAre("[CLS]", "hello", "[SEP]"));
  EXPECT_THAT(text.begin_offsets, ElementsAre(0u, 0u, 0u));
  EXPECT_THAT(text.end_offsets, ElementsAre(0u, 5u, 0u));
  EXPECT_THAT(text.special, ElementsAre(true, false, true));
  EXPECT_TRUE(result.texts[1].ids.empty());
}

TEST(ConvertTest, ModelInfoCarriesTheTokenizerAndTextLimits) {
  const ModelInfo info = FromProto(ParseText<v1::ModelInfo>(R"pb(
    name: "bert"
    config {
      tokenizer {
        kind: "wordpiece"
        file: "tokenizer.json"
        special_tokens { role: "cls" token: "[CLS]" id: 101 }
        special_tokens { role: "sep" token: "[SEP]" id: 102 }
      }
    }
    limits { max_text_bytes_per_call: 1048576 max_spans_per_input: 256 }
  )pb"));
  EXPECT_EQ(info.config.tokenizer.kind, "wordpiece");
  EXPECT_EQ(info.config.tokenizer.file, "tokenizer.json");
  ASSERT_EQ(info.config.tokenizer.special_tokens.size(), 2u);
  const SpecialToken& cls = info.config.tokenizer.special_tokens[0];
  EXPECT_EQ(cls.role, "cls");
  EXPECT_EQ(cls.token, "[CLS]");
  EXPECT_EQ(cls.id, 101u);
  EXPECT_EQ(info.config.tokenizer.special_tokens[1].token, "[SEP]");
  EXPECT_EQ(info.limits.max_text_bytes_per_call, 1048576);
  EXPECT_EQ(info.limits.max_spans_per_input, 256);
}

TEST(ConvertTest, ModelWithoutTokenizerHasAnEmptyKind) {
  const ModelInfo info = FromProto(v1::ModelInfo());
  EXPECT_EQ(info.config.tokenizer.kind, "");
  EXPECT_TRUE(info.config.tokenizer.special_tokens.empty());
}

}  // namespace
}  // namespace favor::client_internal
