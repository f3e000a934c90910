// favor-bench's text inputs (client/loadgen/text_corpus.h): cuts of n
// consecutive tokens, going on into the next document and round to the
// first; documents split from a file; and TokenizeCorpus against a small
// Favor server whose Tokenize splits at spaces, framed by [CLS] and [SEP]:
// calls within the model's limits, the special tokens counted and left
// out, a document over the byte limit and a model without a tokenizer
// refused.
#include "client/loadgen/text_corpus.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "favor/v1/favor.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace favor::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The document `text` with a token per space-separated word.
TextCorpus::Document WordsOf(const std::string& text) {
  TextCorpus::Document document{text, {}};
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) {
      document.tokens.emplace_back(static_cast<uint32_t>(begin),
                                   static_cast<uint32_t>(end));
    }
    begin = end + 1;
  }
  return document;
}

size_t WordCount(const std::string& text) {
  return std::vector<std::string>(
             absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty()))
      .size();
}

TEST(TextCorpusTest, CutsAreConsecutiveTokensAcrossDocuments) {
  auto corpus = TextCorpus::Create(
      {WordsOf("the cat sat"), WordsOf(""), WordsOf("on the mat")}, 2);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(corpus->num_documents(), 2u);
  EXPECT_EQ(corpus->total_tokens(), 6);
  EXPECT_EQ(corpus->framing_tokens(), 2);
  const std::set<std::string> pairs = {"the cat", "cat sat", "sat\non",
                                       "on the",  "the mat", "mat\nthe"};
  std::set<std::string> seen;
  Random random(7);
  for (int i = 0; i < 200; ++i) {
    const std::string cut = corpus->Cut(2, random);
    EXPECT_TRUE(pairs.count(cut)) << cut;
    seen.insert(cut);
    EXPECT_EQ(WordCount(corpus->Cut(7, random)), 7u);
  }
  EXPECT_EQ(seen, pairs);  // every start is drawn
  EXPECT_EQ(WordCount(corpus->Cut(0, random)), 1u);
}

TEST(TextCorpusTest, ACorpusWithoutTokensIsRefused) {
  EXPECT_EQ(TextCorpus::Create({WordsOf(""), WordsOf(" ")}, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TextCorpusTest, DocumentsAreTheNonBlankLinesTrimmed) {
  EXPECT_THAT(SplitDocuments("  first doc \n\n\t\nsecond\r\n"),
              ElementsAre("first doc", "second"));
}

// A Favor server whose Tokenize splits at spaces, with [CLS] and [SEP]
// around; it records the texts of each call. Without `tokenizer` it answers
// FAILED_PRECONDITION.
class SpaceTokenizeServer final : public v1::Favor::Service {
 public:
  explicit SpaceTokenizeServer(bool tokenizer) : tokenizer_(tokenizer) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~SpaceTokenizeServer() override { server_->Shutdown(); }

  std::unique_ptr<Client> NewClient() const {
    ClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", port_)};
    return *Client::Create(options);
  }

  std::vector<std::vector<std::string>> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

  grpc::Status Tokenize(grpc::ServerContext*,
                        const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override {
    if (!tokenizer_) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "model 'm' has no tokenizer");
    }
    {
      absl::MutexLock lock(&mu_);
      calls_.emplace_back(request->texts().begin(), request->texts().end());
    }
    for (const std::string& text : request->texts()) {
      v1::TokenizedText* tokenized = response->add_texts();
      AddToken(tokenized, "[CLS]", 0, 0, true);
      for (const auto& [begin, end] : WordsOf(text).tokens) {
        AddToken(tokenized, text.substr(begin, end - begin), begin, end, false);
      }
      AddToken(tokenized, "[SEP]", 0, 0, true);
    }
    return grpc::Status::OK;
  }

 private:
  static void AddToken(v1::TokenizedText* text, const std::string& token,
                       uint32_t begin, uint32_t end, bool special) {
    text->add_ids(static_cast<uint32_t>(text->ids_size()));
    text->add_tokens(token);
    text->add_begin_offsets(begin);
    text->add_end_offsets(end);
    text->add_special(special);
  }

  const bool tokenizer_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<std::vector<std::string>> calls_ ABSL_GUARDED_BY(mu_);
};

ModelInfo ModelWithLimits(int64_t max_inputs, int64_t max_text_bytes) {
  ModelInfo model;
  model.name = "m";
  model.limits.max_inputs_per_call = max_inputs;
  model.limits.max_text_bytes_per_call = max_text_bytes;
  return model;
}

TEST(TokenizeCorpusTest, CallsStayWithinTheModelsLimits) {
  SpaceTokenizeServer server(/*tokenizer=*/true);
  std::unique_ptr<Client> client = server.NewClient();
  // 10 bytes each: two fit the 25-byte limit, three do not.
  const std::vector<std::string> documents = {
      "aaaa bbbbb", "cccc ddddd", "eeee fffff", "gggg hhhhh", "iiiiiiiiii"};
  auto corpus = TokenizeCorpus(client.get(), ModelWithLimits(3, 25), documents);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(corpus->num_documents(), 5u);
  EXPECT_EQ(corpus->total_tokens(), 9);
  EXPECT_EQ(corpus->framing_tokens(), 2);
  EXPECT_THAT(server.calls(),
              ElementsAre(ElementsAre("aaaa bbbbb", "cccc ddddd"),
                          ElementsAre("eeee fffff", "gggg hhhhh"),
                          ElementsAre("iiiiiiiiii")));
  auto by_count =
      TokenizeCorpus(client.get(), ModelWithLimits(2, 0), documents);
  ASSERT_TRUE(by_count.ok()) << by_count.status();
  EXPECT_EQ(server.calls().size(), 3u + 3u);  // 2 + 2 + 1 documents
  Random random(1);
  const std::string cut = corpus->Cut(3, random);
  EXPECT_EQ(WordCount(cut), 3u) << cut;
  EXPECT_THAT(cut, Not(HasSubstr("[CLS]")));
}

TEST(TokenizeCorpusTest, ADocumentOverTheByteLimitIsNamed) {
  SpaceTokenizeServer server(/*tokenizer=*/true);
  std::unique_ptr<Client> client = server.NewClient();
  auto corpus = TokenizeCorpus(client.get(), ModelWithLimits(8, 8),
                               {"short", "far too long"});
  EXPECT_EQ(corpus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(corpus.status().message(), HasSubstr("non-blank line 2"));
  EXPECT_THAT(corpus.status().message(), HasSubstr("max_text_bytes_per_call"));
}

TEST(TokenizeCorpusTest, AModelWithoutATokenizerFailsAsTheServerSays) {
  SpaceTokenizeServer server(/*tokenizer=*/false);
  std::unique_ptr<Client> client = server.NewClient();
  auto corpus = TokenizeCorpus(client.get(), ModelWithLimits(8, 0), {"text"});
  EXPECT_EQ(corpus.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(corpus.status().message(), HasSubstr("no tokenizer"));
}

}  // namespace
}  // namespace favor::bench
