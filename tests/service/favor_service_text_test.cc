// Text over real gRPC on loopback, with the fake model (pooled embedding
// (sum of ids, length, first id, 1), token rows (id, position, 0, 0)) and a
// small WordPiece tokenizer: text tokenised on the tokenizer threads, bad
// text inputs each answered with its code and a message naming the field
// and the limit, late-chunking spans, Matryoshka dimensions,
// TRUNCATION_CHUNK, Tokenize, GetModel's tokenizer, EmbedStream with text,
// and the tokenizer queue's bound.
#include <pthread.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/metric_names.h"
#include "server/service/favor_service.h"
#include "server/service/status_mapping.h"
#include "tests/metrics/scrape.h"
#include "tests/service/fake_service_fixture.h"
#include "tests/service/test_server.h"

namespace favor::service {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;

// A tokenizer that notes the threads it encodes on and may be held shut.
class WatchedTokenizer final : public tokenizer::Tokenizer {
 public:
  explicit WatchedTokenizer(std::shared_ptr<const tokenizer::Tokenizer> inner)
      : inner_(std::move(inner)) {}

  absl::StatusOr<tokenizer::Encoding> Encode(
      absl::string_view text,
      const tokenizer::EncodeOptions& options) const override {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    absl::MutexLock lock(&mu_);
    threads_.push_back(name);
    ++encodes_;
    mu_.Await(absl::Condition(&open_));
    return inner_->Encode(text, options);
  }
  size_t num_added_special_tokens() const override {
    return inner_->num_added_special_tokens();
  }
  void AddSpecialTokens(tokenizer::Encoding* encoding) const override {
    inner_->AddSpecialTokens(encoding);
  }
  absl::string_view kind() const override { return inner_->kind(); }
  size_t vocab_size() const override { return inner_->vocab_size(); }
  absl::string_view IdToToken(int32_t id) const override {
    return inner_->IdToToken(id);
  }
  std::optional<int32_t> TokenToId(absl::string_view token) const override {
    return inner_->TokenToId(token);
  }
  const std::vector<tokenizer::SpecialToken>& special_tokens() const override {
    return inner_->special_tokens();
  }

  void SetOpen(bool open) {
    absl::MutexLock lock(&mu_);
    open_ = open;
  }
  // Blocks until Encode has been called `n` times (held ones included).
  void WaitForEncodes(int n) const {
    absl::MutexLock lock(&mu_);
    std::pair<const int*, int> arg(&encodes_, n);
    mu_.Await(absl::Condition(
        +[](std::pair<const int*, int>* a) { return *a->first >= a->second; },
        &arg));
  }
  std::vector<std::string> threads() const {
    absl::MutexLock lock(&mu_);
    return threads_;
  }

 private:
  const std::shared_ptr<const tokenizer::Tokenizer> inner_;
  mutable absl::Mutex mu_;
  mutable bool open_ ABSL_GUARDED_BY(mu_) = true;
  mutable int encodes_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::vector<std::string> threads_ ABSL_GUARDED_BY(mu_);
};

v1::EmbedInput Text(const std::string& text) {
  v1::EmbedInput input;
  input.set_text(text);
  return input;
}

void AddSpan(v1::EmbedInput* input, int64_t begin, int64_t end) {
  v1::Span* span = input->add_spans();
  span->set_begin(begin);
  span->set_end(end);
}

v1::EmbedRequest EmbedTexts(const std::vector<std::string>& texts) {
  v1::EmbedRequest request;
  for (const std::string& text : texts) *request.add_inputs() = Text(text);
  return request;
}

class TextServiceTest : public FakeServiceTest {
 protected:
  TextServiceTest()
      : tokenizer_(std::make_shared<WatchedTokenizer>(
            testing::SmallVocabTokenizer())) {
    model_.set_tokenizer(tokenizer_);
  }

  std::shared_ptr<WatchedTokenizer> tokenizer_;
};

TEST_F(TextServiceTest, TextIsTokenisedOnTheTokenizerThreads) {
  Start();
  v1::EmbedResponse response;
  // [CLS] the cat ##s sat . [SEP]
  ASSERT_TRUE(
      CallEmbed(server_->stub(), EmbedTexts({"The cats sat."}), &response)
          .ok());
  EXPECT_THAT(response.embeddings(0).values(), ElementsAre(44, 7, 2, 1));
  EXPECT_EQ(response.num_tokens(), 7);
  for (const std::string& thread : tokenizer_->threads()) {
    EXPECT_EQ(thread, "favor-tokenizer");
  }
  const std::string text = server_->metrics().SerializeText();
  EXPECT_EQ(
      metrics::scrape::FindSample(
          text, absl::StrCat(metrics::kTokenizationDurationSeconds, "_count"),
          {{"model", "fake"}}),
      1.0);
}

TEST_F(TextServiceTest, TextAndTokenIdsMixInOneCall) {
  Start();
  v1::EmbedRequest request = EmbedTexts({"the mat"});
  request.add_inputs()->add_token_ids(42);
  v1::EmbedResponse response;
  ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
  EXPECT_THAT(response.embeddings(0).values(), ElementsAre(19, 4, 2, 1));
  EXPECT_THAT(response.embeddings(1).values(), ElementsAre(42, 1, 42, 1));
}

struct BadCall {
  const char* name;
  v1::EmbedRequest request;
  grpc::StatusCode code;
  const char* message;
};

std::vector<BadCall> BadTextCalls() {
  std::vector<BadCall> cases;
  auto add = [&](const char* name, grpc::StatusCode code, const char* message,
                 auto mutate) {
    v1::EmbedRequest request = EmbedTexts({"the cat"});
    mutate(request);
    cases.push_back({name, request, code, message});
  };
  const auto invalid = grpc::INVALID_ARGUMENT;
  add("NUL and controls are text", grpc::OK, "",
      [](auto& r) { r.add_inputs()->set_text(std::string("a\0\x01b", 4)); });
  add("empty", invalid,
      "inputs[1].token_ids is empty and inputs[1].text is empty",
      [](auto& r) { r.add_inputs(); });
  add("both", invalid, "inputs[0] sets both token_ids and text",
      [](auto& r) { r.mutable_inputs(0)->add_token_ids(5); });
  add("too many tokens", invalid,
      "inputs[0].text has 82 tokens; at most 64 (max_tokens_per_input)",
      [](auto& r) {
        std::string text;
        for (int i = 0; i < 40; ++i) text += "the cat ";
        r.mutable_inputs(0)->set_text(text);
      });
  add("span past the end", invalid,
      "inputs[0].spans[0] is [4, 9): past the end of the input's 7 bytes",
      [](auto& r) { AddSpan(r.mutable_inputs(0), 4, 9); });
  add("empty span", invalid, "inputs[0].spans[0] is [3, 3): empty",
      [](auto& r) { AddSpan(r.mutable_inputs(0), 3, 3); });
  add("negative span", invalid, "inputs[0].spans[0] is [-1, 3); begin",
      [](auto& r) { AddSpan(r.mutable_inputs(0), -1, 3); });
  add("span on a space", invalid,
      "inputs[0].spans[0] is [3, 4): it covers no token",
      [](auto& r) { AddSpan(r.mutable_inputs(0), 3, 4); });
  add("too many spans", invalid,
      "inputs[0].spans has 3 spans; at most 2 (max_spans_per_input)",
      [](auto& r) {
        for (int i = 0; i < 3; ++i) AddSpan(r.mutable_inputs(0), 0, 3);
      });
  add("dimensions over hidden", invalid,
      "dimensions is 5; must be in [1, 4] (hidden_size), or 0 for all",
      [](auto& r) { r.set_dimensions(5); });
  add("negative dimensions", invalid, "dimensions is -1",
      [](auto& r) { r.set_dimensions(-1); });
  add("overlap", invalid,
      "chunk_overlap_tokens is 32; must be >= 0 and below half of "
      "max_tokens_per_input (64)",
      [](auto& r) { r.set_chunk_overlap_tokens(32); });
  // A huge overlap is refused: 2 × overlap must not overflow and wrap
  // negative, which would let it pass.
  add("overlap past 2^62", invalid,
      "chunk_overlap_tokens is 9223372036854775807; must be >= 0", [](auto& r) {
        r.set_chunk_overlap_tokens(std::numeric_limits<int64_t>::max());
      });
  add("chunk with spans", invalid, "not with truncation TRUNCATION_CHUNK",
      [](auto& r) {
        r.set_truncation(v1::TRUNCATION_CHUNK);
        AddSpan(r.mutable_inputs(0), 0, 3);
      });
  add("chunk with token embeddings", invalid,
      "it cannot return token embeddings", [](auto& r) {
        r.set_truncation(v1::TRUNCATION_CHUNK);
        r.set_include_token_embeddings(true);
      });
  return cases;
}

TEST_F(TextServiceTest, BadTextNamesTheFieldAndTheLimitAndServingGoesOn) {
  FavorService::Options options;
  options.max_spans_per_input = 2;
  Start(options);
  for (const BadCall& c : BadTextCalls()) {
    const grpc::Status status = CallEmbed(server_->stub(), c.request);
    EXPECT_EQ(status.error_code(), c.code)
        << c.name << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message)) << c.name;
  }
  v1::EmbedResponse response;
  ASSERT_TRUE(
      CallEmbed(server_->stub(), EmbedTexts({"the cat"}), &response).ok());
  EXPECT_THAT(response.embeddings(0).values(), ElementsAre(16, 4, 2, 1));
}

// EmbedInput.text is a proto3 string: protobuf's parser refuses a message
// whose text is not UTF-8 before the service sees it (and Python's and
// Go's protobuf refuse to build one), so the service's own check, which
// names the input and the byte offset (embed_inputs_text_test.cc), is a second
// line behind it. Either way the call fails and the server goes on.
TEST_F(TextServiceTest, InvalidUtf8FailsTheCallAndServingGoesOn) {
  Start();
  v1::EmbedRequest request = EmbedTexts({"the cat", "the \xC3("});
  const grpc::Status status = CallEmbed(server_->stub(), request);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(tokenizer_->threads().empty());  // never tokenised
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedTexts({"the cat"})).ok());
}

// Counted over the call's inputs, before anything is made from the text.
TEST_F(TextServiceTest, TextOverTheCallsByteLimitIsRefused) {
  FavorService::Options options;
  options.max_text_bytes_per_call = 16;
  Start(options);
  const grpc::Status status =
      CallEmbed(server_->stub(), EmbedTexts({"the cat", "the mat is"}));
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("inputs hold 17 bytes of text in all; at most 16 "
                        "(max_text_bytes_per_call)"));
  EXPECT_TRUE(tokenizer_->threads().empty());  // never tokenised
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedTexts({"the cat"})).ok());
}

// An answer that could not be sent (over --max_message_bytes) is refused
// with RESOURCE_EXHAUSTED before the model computes it, counted from the
// tokens the inputs really have: a text's bound from its bytes is not used.
TEST_F(TextServiceTest,
       AnAnswerOverTheMessageLimitIsRefusedBeforeItIsComputed) {
  FavorService::Options options;
  options.max_answer_message_bytes = 2000;
  Start(options);
  // 64 token rows of 4 float32 values: 1024 bytes of token embeddings,
  // and 1200 bytes of bound for the rest of the answer (AnswerBytesBound).
  v1::EmbedRequest ids = EmbedOf({std::vector<uint32_t>(64, 5)});
  ids.set_include_token_embeddings(true);
  const grpc::Status over = CallEmbed(server_->stub(), ids);
  EXPECT_EQ(over.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(over.error_message(),
              HasSubstr("2224 bytes, over the 2000 a message may have "
                        "(--max_message_bytes)"));
  // As the memory budget's refusal ends: favor's client does not retry.
  EXPECT_THAT(over.error_message(),
              ::testing::EndsWith("it can never run here"));
  EXPECT_EQ(model_.calls(), 0);
  // 80 bytes of text bound 84 tokens (2544 bytes in all), but they are 20
  // tokens and 2 special ones (1552 bytes): answered.
  std::string text;
  for (int i = 0; i < 10; ++i) text += "the cat ";
  v1::EmbedRequest words = EmbedTexts({text});
  words.set_include_token_embeddings(true);
  v1::EmbedResponse response;
  const grpc::Status fits = CallEmbed(server_->stub(), words, &response);
  ASSERT_TRUE(fits.ok()) << fits.error_message();
  EXPECT_EQ(response.embeddings(0).num_tokens(), 22);
  // The ids' token embeddings in bfloat16 (1712 bytes) fit.
  ids.set_token_embeddings_dtype(v1::DTYPE_BFLOAT16);
  EXPECT_TRUE(CallEmbed(server_->stub(), ids).ok());
}

TEST_F(FakeServiceTest, TextForAModelWithoutTokenizerIsAFailedPrecondition) {
  Start();
  const grpc::Status embed = CallEmbed(server_->stub(), EmbedTexts({"hi"}));
  EXPECT_EQ(embed.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_THAT(embed.error_message(),
              HasSubstr("inputs[0].text: model 'fake' has no tokenizer"));
  grpc::ClientContext context;
  v1::TokenizeRequest request;
  request.add_texts("hi");
  v1::TokenizeResponse response;
  const grpc::Status tokenize =
      server_->stub().Tokenize(&context, request, &response);
  EXPECT_EQ(tokenize.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_THAT(tokenize.error_message(), HasSubstr("has no tokenizer"));
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1, 2}})).ok());
}

// Late chunking: each span is the mean of the token rows it covers, from
// the same pass; the fake model's rows are (id, position, 0, 0).
TEST_F(TextServiceTest, SpansAreMeansOfTheirTokenVectors) {
  Start();
  v1::EmbedRequest request = EmbedTexts({"the cats sat."});
  AddSpan(request.mutable_inputs(0), 4, 8);   // cat ##s: positions 2, 3
  AddSpan(request.mutable_inputs(0), 0, 13);  // every token of the text
  v1::EmbedInput* ids = request.add_inputs();
  for (uint32_t id : {7, 8, 9, 10}) ids->add_token_ids(id);
  AddSpan(request.mutable_inputs(1), 1, 3);  // ids 8, 9 at positions 1, 2
  request.set_include_token_embeddings(true);
  v1::EmbedResponse response;
  ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
  const v1::Embedding& text = response.embeddings(0);
  ASSERT_EQ(text.spans_size(), 2);
  EXPECT_THAT(text.spans(0).values(), ElementsAre(8, 2.5, 0, 0));
  EXPECT_EQ(text.spans(0).num_tokens(), 2);
  EXPECT_THAT(text.spans(1).values(), ElementsAre(39 / 5.0f, 3, 0, 0));
  EXPECT_EQ(text.spans(1).num_tokens(), 5);
  EXPECT_THAT(text.values(), ElementsAre(44, 7, 2, 1));  // pooled as ever
  EXPECT_EQ(FloatsOf(text.token_embeddings()).size(), 7u * 4);
  ASSERT_EQ(response.embeddings(1).spans_size(), 1);
  EXPECT_THAT(response.embeddings(1).spans(0).values(),
              ElementsAre(8.5, 1.5, 0, 0));
}

// Matryoshka: the first `dimensions` values, renormalised under L2, for
// the pooled embedding and every span.
TEST_F(TextServiceTest, DimensionsCutAndRenormalise) {
  Start();
  v1::EmbedRequest request = EmbedOf({{3, 4}});
  AddSpan(request.mutable_inputs(0), 0, 2);
  request.set_dimensions(2);
  v1::EmbedResponse response;
  ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
  EXPECT_THAT(response.embeddings(0).values(), ElementsAre(7, 2));
  EXPECT_THAT(response.embeddings(0).spans(0).values(), ElementsAre(3.5, 0.5));
  request.set_normalization(v1::NORMALIZATION_L2);
  ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
  const float norm = std::sqrt(53.0f);
  EXPECT_THAT(
      response.embeddings(0).values(),
      ElementsAre(FloatNear(7 / norm, 1e-6), FloatNear(2 / norm, 1e-6)));
  const float span_norm = std::sqrt(12.5f);
  EXPECT_THAT(response.embeddings(0).spans(0).values(),
              ElementsAre(FloatNear(3.5 / span_norm, 1e-6),
                          FloatNear(0.5 / span_norm, 1e-6)));
}

// TRUNCATION_CHUNK: windows of 64 tokens sharing 8, each embedded on its
// own, pooled by their token counts. Text windows are framed.
TEST_F(TextServiceTest, ChunkPoolsWindowsByTheirTokenCounts) {
  Start();
  std::vector<uint32_t> ids(90);
  for (int i = 0; i < 90; ++i) ids[i] = i;
  v1::EmbedRequest request = EmbedOf({ids});
  request.set_truncation(v1::TRUNCATION_CHUNK);
  request.set_chunk_overlap_tokens(8);
  v1::EmbedResponse response;
  ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
  // Windows [0, 64) and [56, 90): sums 2016 and 2465, lengths 64 and 34.
  const v1::Embedding& e = response.embeddings(0);
  EXPECT_EQ(e.num_chunks(), 2);
  EXPECT_EQ(e.num_tokens(), 98);
  EXPECT_EQ(e.num_truncated_tokens(), 0);
  EXPECT_THAT(e.values(),
              ElementsAre(FloatNear((64 * 2016.0 + 34 * 2465.0) / 98, 1e-3),
                          FloatNear((64 * 64.0 + 34 * 34.0) / 98, 1e-4),
                          FloatNear((64 * 0 + 34 * 56.0) / 98, 1e-4), 1));
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat ";  // 80 tokens of text
  request = EmbedTexts({text, "the mat"});
  request.set_truncation(v1::TRUNCATION_CHUNK);
  request.set_chunk_overlap_tokens(8);
  ASSERT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
  // 62 tokens of text a window: [0, 62) and [54, 80), framed: 64 and 28.
  EXPECT_EQ(response.embeddings(0).num_chunks(), 2);
  EXPECT_EQ(response.embeddings(0).num_tokens(), 92);
  EXPECT_THAT(
      response.embeddings(0).values(),
      ElementsAre(::testing::_, FloatNear((64 * 64.0 + 28 * 28.0) / 92, 1e-4),
                  FloatNear(2, 1e-6), 1));  // every window: [CLS]
  EXPECT_EQ(response.embeddings(1).num_chunks(), 1);
  EXPECT_THAT(response.embeddings(1).values(), ElementsAre(19, 4, 2, 1));
}

TEST_F(TextServiceTest, TokenizeGivesIdsTokensAndByteOffsets) {
  Start();
  v1::TokenizeRequest request;
  request.add_texts("The cats");
  request.add_texts("mat.");
  v1::TokenizeResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(server_->stub().Tokenize(&context, request, &response).ok());
  }
  EXPECT_EQ(response.model(), "fake");
  ASSERT_EQ(response.texts_size(), 2);
  const v1::TokenizedText& first = response.texts(0);
  EXPECT_THAT(first.ids(), ElementsAre(2, 5, 6, 10, 3));
  EXPECT_THAT(first.tokens(),
              ElementsAre("[CLS]", "the", "cat", "##s", "[SEP]"));
  EXPECT_THAT(first.begin_offsets(), ElementsAre(0, 0, 4, 7, 0));
  EXPECT_THAT(first.end_offsets(), ElementsAre(0, 3, 7, 8, 0));
  EXPECT_THAT(first.special(), ElementsAre(true, false, false, false, true));
  request.set_without_special_tokens(true);
  response.Clear();
  {
    grpc::ClientContext context;
    ASSERT_TRUE(server_->stub().Tokenize(&context, request, &response).ok());
  }
  EXPECT_THAT(response.texts(1).ids(), ElementsAre(9, 11));
  EXPECT_THAT(response.texts(1).begin_offsets(), ElementsAre(0, 3));
  request.add_texts("");
  grpc::ClientContext context;
  const grpc::Status empty =
      server_->stub().Tokenize(&context, request, &response);
  EXPECT_EQ(empty.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(empty.error_message(), HasSubstr("texts[2] is empty"));
}

// A Tokenize call answers at most max_tokens_per_call tokens (100 here), as
// an Embed call reads. Otherwise 10 MiB of "!" (within the text limit) is
// tokenised into a 142 MB answer that gRPC refuses to send, as
// RESOURCE_EXHAUSTED about a message the client never sent.
TEST_F(TextServiceTest, TokenizeAnswersAtMostACallsTokens) {
  Start();
  std::string text;
  for (int i = 0; i < 20; ++i) text += "the cat ";  // 40 tokens, 42 framed
  v1::TokenizeRequest request;
  request.add_texts(text);
  request.add_texts(text);
  v1::TokenizeResponse response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(server_->stub().Tokenize(&context, request, &response).ok());
    EXPECT_EQ(response.texts(0).ids_size() + response.texts(1).ids_size(), 84);
  }
  request.add_texts(text);
  grpc::ClientContext context;
  const grpc::Status over =
      server_->stub().Tokenize(&context, request, &response);
  EXPECT_EQ(over.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(over.error_message(),
              HasSubstr("texts[0..2] have 126 tokens, over the 100 a call may "
                        "have (max_tokens_per_call)"));
}

// sentence-transformers' prompts: the named one (else the model's default)
// goes before each text, tokenised with it and counted; spans, byte
// ranges of the text, stay on their words; an unknown name, or a name with
// token-id inputs, is refused; GetModel lists them.
TEST_F(TextServiceTest, PromptsGoBeforeTheTextAndAreCounted) {
  model_.set_prompts({{"query", "the mat . "}, {"doc", "sat "}}, "doc");
  Start();
  const auto embed = [&](v1::EmbedRequest request) {
    v1::EmbedResponse response;
    EXPECT_TRUE(CallEmbed(server_->stub(), request, &response).ok());
    return response;
  };
  // [CLS] the mat . the cat [SEP]: the prompt's tokens and the text's.
  v1::EmbedRequest named = EmbedTexts({"the cat"});
  named.set_prompt_name("query");
  const v1::EmbedResponse with = embed(named);
  ASSERT_EQ(with.embeddings_size(), 1);
  EXPECT_THAT(with.embeddings(0).values(), ElementsAre(41, 7, 2, 1));
  EXPECT_EQ(with.num_tokens(), 7);
  // The model's default when none is named: [CLS] sat the cat [SEP].
  const v1::EmbedResponse by_default = embed(EmbedTexts({"the cat"}));
  ASSERT_EQ(by_default.embeddings_size(), 1);
  EXPECT_THAT(by_default.embeddings(0).values(), ElementsAre(23, 5, 2, 1));
  EXPECT_EQ(by_default.num_tokens(), 5);
  // A span over "cat" (bytes 4 to 7 of the text) is the token "cat".
  v1::EmbedRequest spans = EmbedTexts({"the cat"});
  spans.set_prompt_name("query");
  AddSpan(spans.mutable_inputs(0), 4, 7);
  const v1::EmbedResponse spanned = embed(spans);
  ASSERT_EQ(spanned.embeddings_size(), 1);
  ASSERT_EQ(spanned.embeddings(0).spans_size(), 1);
  EXPECT_THAT(spanned.embeddings(0).spans(0).values(),
              ElementsAre(6, 5, 0, 0));

  v1::EmbedRequest unknown = EmbedTexts({"the cat"});
  unknown.set_prompt_name("passage");
  grpc::Status status = CallEmbed(server_->stub(), unknown);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("prompt_name 'passage' is not one of model 'fake''s "
                        "prompts (doc, query)"));
  v1::EmbedRequest ids;
  ids.add_inputs()->add_token_ids(5);
  ids.set_prompt_name("query");
  status = CallEmbed(server_->stub(), ids);
  EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("prompt_name applies to text"));
  // Token ids under a default prompt are the client's own: as they are.
  v1::EmbedRequest plain_ids;
  plain_ids.add_inputs()->add_token_ids(5);
  const v1::EmbedResponse as_given = embed(plain_ids);
  ASSERT_EQ(as_given.embeddings_size(), 1);
  EXPECT_THAT(as_given.embeddings(0).values(), ElementsAre(5, 1, 5, 1));

  grpc::ClientContext context;
  v1::GetModelResponse model;
  ASSERT_TRUE(
      server_->stub().GetModel(&context, v1::GetModelRequest(), &model).ok());
  EXPECT_THAT(model.model().config().prompts(),
              ::testing::UnorderedElementsAre(
                  ::testing::Pair("query", "the mat . "),
                  ::testing::Pair("doc", "sat ")));
  EXPECT_EQ(model.model().config().default_prompt_name(), "doc");
}

TEST_F(TextServiceTest, GetModelReportsTheTokenizerAndTheTextLimits) {
  FavorService::Options options;
  options.max_text_bytes_per_call = 1000;
  options.max_spans_per_input = 7;
  Start(options);
  grpc::ClientContext context;
  v1::GetModelResponse response;
  ASSERT_TRUE(server_->stub()
                  .GetModel(&context, v1::GetModelRequest(), &response)
                  .ok());
  const v1::TokenizerInfo& tokenizer = response.model().config().tokenizer();
  EXPECT_EQ(tokenizer.kind(), "wordpiece");
  EXPECT_EQ(tokenizer.file(), "vocab.txt");
  ASSERT_EQ(tokenizer.special_tokens_size(), 2);
  EXPECT_EQ(tokenizer.special_tokens(0).role(), "cls");
  EXPECT_EQ(tokenizer.special_tokens(0).token(), "[CLS]");
  EXPECT_EQ(tokenizer.special_tokens(0).id(), 2u);
  EXPECT_EQ(tokenizer.special_tokens(1).role(), "sep");
  EXPECT_EQ(tokenizer.special_tokens(1).id(), 3u);
  EXPECT_EQ(response.model().limits().max_text_bytes_per_call(), 1000);
  EXPECT_EQ(response.model().limits().max_spans_per_input(), 7);
  EXPECT_EQ(response.model().config().architecture(), "favor");
}

TEST_F(TextServiceTest, EmbedStreamTakesText) {
  Start();
  grpc::ClientContext context;
  auto stream = server_->stub().EmbedStream(&context);
  for (const char* text : {"the cat", "the mat"}) {
    v1::EmbedStreamRequest message;
    message.set_request_id(text);
    *message.mutable_request() = EmbedTexts({text});
    if (std::string(text) == "the mat") {
      AddSpan(message.mutable_request()->mutable_inputs(0), 0, 99);
    }
    ASSERT_TRUE(stream->Write(message));
  }
  stream->WritesDone();
  std::map<std::string, v1::EmbedStreamResponse> answers;
  v1::EmbedStreamResponse answer;
  while (stream->Read(&answer)) answers[answer.request_id()] = answer;
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_THAT(answers["the cat"].response().embeddings(0).values(),
              ElementsAre(16, 4, 2, 1));
  EXPECT_EQ(answers["the mat"].error().code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(answers["the mat"].error().message(),
              HasSubstr("inputs[0].spans[0] is [0, 99): past the end"));
}

// A text message whose read completes as its stream is cancelled must not
// be answered from the tokenizer queue after the stream has finished and
// its reactor is freed: clients cancelling streams just after a text
// message would crash the server within seconds. Four clients do that here
// for 3 s (about 13,000 streams), cancelling 0 to 1 ms after the write; a
// server that answers such a message late crashes in 5 runs of 5.
TEST_F(TextServiceTest, StreamsCancelledAfterATextMessageLeaveNothingBehind) {
  Start();
  std::atomic<bool> stop{false};
  std::atomic<int> streams{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto stub = server_->NewStub();
      absl::BitGen random;
      while (!stop.load()) {
        grpc::ClientContext context;
        auto stream = stub->EmbedStream(&context);
        v1::EmbedStreamRequest message;
        message.set_request_id(absl::StrCat(c));
        *message.mutable_request() = EmbedTexts({"the cat sat on the mat"});
        stream->Write(message);
        absl::SleepFor(absl::Microseconds(absl::Uniform(random, 0, 1000)));
        context.TryCancel();
        v1::EmbedStreamResponse answer;
        while (stream->Read(&answer)) {
        }
        stream->Finish().IgnoreError();
        streams.fetch_add(1);
      }
    });
  }
  absl::SleepFor(absl::Seconds(3));
  stop.store(true);
  for (std::thread& client : clients) client.join();
  EXPECT_GT(streams.load(), 100);
  // Every stream is gone, and the server goes on.
  EXPECT_TRUE(
      WaitUntil([&] { return server_->service().num_open_calls() == 0; }));
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedTexts({"the cat"})).ok());
}

// The calls waiting for the tokenizer threads are bounded: one more is
// refused with RESOURCE_EXHAUSTED and a retry hint.
TEST_F(TextServiceTest, AFullTokenizerQueueIsRetryable) {
  FavorService::Options options;
  options.tokenizer_threads = 1;
  options.max_queued_tokenizations = 1;
  Start(options);
  tokenizer_->SetOpen(false);
  auto stub = server_->NewStub();
  grpc::Status first;
  std::thread busy([&] { first = CallEmbed(*stub, EmbedTexts({"the cat"})); });
  tokenizer_->WaitForEncodes(1);  // the one thread is busy
  // Two more calls: one waits in the queue, the other is refused at once.
  absl::Mutex mu;
  int answered = 0;
  std::vector<grpc::Status> statuses(2);
  std::vector<std::thread> more;
  for (int i = 0; i < 2; ++i) {
    more.emplace_back([&, i] {
      statuses[i] = CallEmbed(*stub, EmbedTexts({"the mat"}));
      absl::MutexLock lock(&mu);
      ++answered;
    });
  }
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n >= 1; }, &answered));
  }
  tokenizer_->SetOpen(true);
  busy.join();
  for (std::thread& thread : more) thread.join();
  EXPECT_TRUE(first.ok()) << first.error_message();
  int refused = 0;
  for (const grpc::Status& status : statuses) {
    if (status.ok()) continue;
    ++refused;
    EXPECT_EQ(status.error_code(), grpc::RESOURCE_EXHAUSTED);
    EXPECT_THAT(status.error_message(),
                HasSubstr("the tokenizer queue is full (1 calls waiting); "
                          "retry after"));
  }
  EXPECT_EQ(refused, 1);
}

}  // namespace
}  // namespace favor::service
