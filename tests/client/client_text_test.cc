// favor::Client's text API against a scripted Favor server on loopback
// (RecordingServer: it records every request and answers what the test set):
// text inputs, spans, dimensions, chunked truncation and its overlap reach
// the wire in every form (blocking, callback, future, EmbedStreamer); span
// embeddings and chunk counts come back; text that is not UTF-8 refused
// before it is sent; Tokenize in its three forms, its errors and its
// retries; the tokenizer and the text limits of GetModel and
// ListModels.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "favor/client.h"
#include "favor/v1/favor.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/client/proto_test_util.h"

namespace favor {
namespace {

using ::testing::ElementsAre;

using ::favor::testing::ExpectProtoEq;
using ::favor::testing::ParseText;

// A Favor server that records the requests it gets and answers the
// responses set before the calls; Tokenize fails `tokenize_failures` times
// with `tokenize_error` first.
class RecordingServer final : public v1::Favor::Service {
 public:
  RecordingServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~RecordingServer() override { server_->Shutdown(); }

  std::unique_ptr<Client> NewClient() const {
    ClientOptions options;
    options.endpoints = {absl::StrCat("127.0.0.1:", port_)};
    options.default_timeout = absl::Seconds(20);
    options.retry.initial_backoff = absl::Milliseconds(1);
    options.retry.max_backoff = absl::Milliseconds(2);
    return *Client::Create(options);
  }

  // Set before any call.
  v1::EmbedResponse embed_response;
  v1::TokenizeResponse tokenize_response;
  v1::ModelInfo model;
  grpc::Status tokenize_error;
  int tokenize_failures = 0;

  std::vector<v1::EmbedRequest> embed_requests() const {
    absl::MutexLock lock(&mu_);
    return embed_requests_;
  }
  std::vector<v1::TokenizeRequest> tokenize_requests() const {
    absl::MutexLock lock(&mu_);
    return tokenize_requests_;
  }

  grpc::Status Embed(grpc::ServerContext*, const v1::EmbedRequest* request,
                     v1::EmbedResponse* response) override {
    absl::MutexLock lock(&mu_);
    embed_requests_.push_back(*request);
    *response = embed_response;
    return grpc::Status::OK;
  }

  grpc::Status EmbedStream(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::EmbedStreamResponse, v1::EmbedStreamRequest>*
          stream) override {
    v1::EmbedStreamRequest request;
    while (stream->Read(&request)) {
      {
        absl::MutexLock lock(&mu_);
        embed_requests_.push_back(request.request());
      }
      v1::EmbedStreamResponse response;
      response.set_request_id(request.request_id());
      *response.mutable_response() = embed_response;
      stream->Write(response);
    }
    return grpc::Status::OK;
  }

  grpc::Status Tokenize(grpc::ServerContext*,
                        const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override {
    absl::MutexLock lock(&mu_);
    tokenize_requests_.push_back(*request);
    if (static_cast<int>(tokenize_requests_.size()) <= tokenize_failures) {
      return tokenize_error;
    }
    *response = tokenize_response;
    return grpc::Status::OK;
  }

  grpc::Status GetModel(grpc::ServerContext*, const v1::GetModelRequest*,
                        v1::GetModelResponse* response) override {
    *response->mutable_model() = model;
    return grpc::Status::OK;
  }

  grpc::Status ListModels(grpc::ServerContext*, const v1::ListModelsRequest*,
                          v1::ListModelsResponse* response) override {
    *response->add_models() = model;
    response->set_default_model(model.name());
    return grpc::Status::OK;
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<v1::EmbedRequest> embed_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::TokenizeRequest> tokenize_requests_ ABSL_GUARDED_BY(mu_);
};

// Waits for a callback-form result.
template <typename T>
absl::StatusOr<T> Await(const std::function<void(Callback<T>)>& start) {
  absl::Notification done;
  absl::StatusOr<T> result = absl::UnknownError("no result");
  start([&](absl::StatusOr<T> r) {
    result = std::move(r);
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  return result;
}

class ClientTextTest : public ::testing::Test {
 protected:
  ClientTextTest() : client_(server_.NewClient()) {
    server_.embed_response = ParseText<v1::EmbedResponse>(R"pb(
      model: "bert"
      num_tokens: 14
      embeddings {
        values: [ 0.6, 0.8 ]
        num_tokens: 7
        spans {
          values: [ 1, 0 ]
          num_tokens: 2
        }
        spans {
          values: [ 0, -1 ]
          num_tokens: 3
        }
      }
      embeddings {
        values: [ 0.8, 0.6 ]
        num_tokens: 7
        num_chunks: 2
      }
    )pb");
    server_.tokenize_response = ParseText<v1::TokenizeResponse>(R"pb(
      model: "bert"
      texts {
        ids: [ 101, 7592, 2088, 102 ]
        tokens: [ "[CLS]", "hello", "world", "[SEP]" ]
        begin_offsets: [ 0, 0, 6, 0 ]
        end_offsets: [ 0, 5, 11, 0 ]
        special: [ true, false, false, true ]
      }
    )pb");
  }

  // Two inputs: text with two spans, ids with one; Matryoshka and chunking.
  const std::vector<EmbedInput> inputs_ = {
      EmbedInput("hello world", {{0, 5}, {6, 11}}),
      EmbedInput(TokenIds{101, 7592, 102}, {{1, 2}})};
  EmbedOptions Options() const {
    EmbedOptions options;
    options.model = "bert";
    options.dimensions = 2;
    options.truncation = Truncation::kChunk;
    options.chunk_overlap_tokens = 64;
    return options;
  }
  const v1::EmbedRequest sent_ = ParseText<v1::EmbedRequest>(R"pb(
    model: "bert"
    inputs {
      text: "hello world"
      spans { begin: 0 end: 5 }
      spans { begin: 6 end: 11 }
    }
    inputs {
      token_ids: [ 101, 7592, 102 ]
      spans { begin: 1 end: 2 }
    }
    truncation: TRUNCATION_CHUNK
    token_embeddings_dtype: DTYPE_FLOAT32
    priority: PRIORITY_NORMAL
    dimensions: 2
    chunk_overlap_tokens: 64
  )pb");

  static void ExpectAnswer(const absl::StatusOr<EmbedResult>& result) {
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->embeddings.size(), 2u);
    const Embedding& first = result->embeddings[0];
    EXPECT_THAT(first.values, ElementsAre(0.6f, 0.8f));
    ASSERT_EQ(first.spans.size(), 2u);
    EXPECT_THAT(first.spans[0].values, ElementsAre(1.0f, 0.0f));
    EXPECT_EQ(first.spans[0].num_tokens, 2);
    EXPECT_THAT(first.spans[1].values, ElementsAre(0.0f, -1.0f));
    EXPECT_EQ(first.spans[1].num_tokens, 3);
    EXPECT_EQ(first.num_chunks, 0);
    EXPECT_TRUE(result->embeddings[1].spans.empty());
    EXPECT_EQ(result->embeddings[1].num_chunks, 2);
    EXPECT_EQ(result->num_tokens, 14);
  }

  static void ExpectTokens(const absl::StatusOr<TokenizeResult>& result) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->model, "bert");
    ASSERT_EQ(result->texts.size(), 1u);
    const TokenizedText& text = result->texts[0];
    EXPECT_THAT(text.ids, ElementsAre(101u, 7592u, 2088u, 102u));
    EXPECT_THAT(text.tokens, ElementsAre("[CLS]", "hello", "world", "[SEP]"));
    EXPECT_THAT(text.begin_offsets, ElementsAre(0u, 0u, 6u, 0u));
    EXPECT_THAT(text.end_offsets, ElementsAre(0u, 5u, 11u, 0u));
    EXPECT_THAT(text.special, ElementsAre(true, false, false, true));
  }

  RecordingServer server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTextTest, EmbedSendsTextSpansDimensionsAndChunkingInEveryForm) {
  ExpectAnswer(client_->Embed(inputs_, Options()));
  ExpectAnswer(Await<EmbedResult>([&](Callback<EmbedResult> done) {
    client_->EmbedAsync(inputs_, Options(), {}, std::move(done));
  }));
  ExpectAnswer(client_->EmbedFuture(inputs_, Options()).get());
  const std::vector<v1::EmbedRequest> requests = server_.embed_requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const v1::EmbedRequest& request : requests) {
    ExpectProtoEq(request, sent_);
  }
}

TEST_F(ClientTextTest, EmbedStreamerSendsTextInputs) {
  absl::StatusOr<std::unique_ptr<EmbedStreamer>> streamer =
      client_->OpenEmbedStream();
  ASSERT_TRUE(streamer.ok()) << streamer.status();
  ASSERT_TRUE((*streamer)->Send(inputs_, Options()).ok());
  std::optional<StreamedEmbedResult> answer = (*streamer)->Next();
  ASSERT_TRUE(answer.has_value());
  ExpectAnswer(answer->result);
  EXPECT_TRUE((*streamer)->Finish().ok());
  ASSERT_EQ(server_.embed_requests().size(), 1u);
  ExpectProtoEq(server_.embed_requests()[0], sent_);
}

TEST_F(ClientTextTest, ABracedListOfStringsIsTextInputs) {
  ASSERT_TRUE(client_->Embed({"one", std::string("two")}).ok());
  const std::string third = "three";
  ASSERT_TRUE(client_->EmbedFuture({third}).get().ok());
  const std::vector<v1::EmbedRequest> requests = server_.embed_requests();
  ASSERT_EQ(requests.size(), 2u);
  ExpectProtoEq(requests[0], ParseText<v1::EmbedRequest>(R"pb(
                  inputs { text: "one" }
                  inputs { text: "two" }
                  truncation: TRUNCATION_NONE
                  token_embeddings_dtype: DTYPE_FLOAT32
                  priority: PRIORITY_NORMAL
                )pb"));
  ASSERT_EQ(requests[1].inputs_size(), 1);
  EXPECT_EQ(requests[1].inputs(0).text(), "three");
  EXPECT_EQ(requests[1].inputs(0).token_ids_size(), 0);
}

TEST_F(ClientTextTest, InvalidUtf8IsRefusedBeforeAnythingIsSent) {
  const std::vector<EmbedInput> inputs = {EmbedInput("fine"),
                                          EmbedInput("caf\xc3")};
  const absl::Status expected = absl::InvalidArgumentError(
      "inputs[1].text is not valid UTF-8: invalid byte 0xc3 at byte offset 3");
  EXPECT_EQ(client_->Embed(inputs).status(), expected);
  EXPECT_EQ(Await<EmbedResult>([&](Callback<EmbedResult> done) {
              client_->EmbedAsync(inputs, {}, {}, std::move(done));
            }).status(),
            expected);
  EXPECT_EQ(client_->EmbedFuture(inputs).get().status(), expected);
  absl::StatusOr<std::unique_ptr<EmbedStreamer>> streamer =
      client_->OpenEmbedStream();
  ASSERT_TRUE(streamer.ok()) << streamer.status();
  EXPECT_EQ((*streamer)->Send(inputs).status(), expected);
  EXPECT_TRUE((*streamer)->Finish().ok());
  const absl::Status tokenize = absl::InvalidArgumentError(
      "texts[0] is not valid UTF-8: invalid byte 0xff at byte offset 0");
  EXPECT_EQ(client_->Tokenize({"\xff"}).status(), tokenize);
  EXPECT_EQ(Await<TokenizeResult>([&](Callback<TokenizeResult> done) {
              client_->TokenizeAsync({"\xff"}, {}, {}, std::move(done));
            }).status(),
            tokenize);
  EXPECT_EQ(client_->TokenizeFuture({"\xff"}).get().status(), tokenize);
  EXPECT_TRUE(server_.embed_requests().empty());
  EXPECT_TRUE(server_.tokenize_requests().empty());
}

TEST_F(ClientTextTest, TokenizeInEveryForm) {
  TokenizeOptions options;
  options.model = "bert";
  options.without_special_tokens = true;
  const std::vector<std::string> texts = {"hello world"};
  ExpectTokens(client_->Tokenize(texts, options));
  ExpectTokens(Await<TokenizeResult>([&](Callback<TokenizeResult> done) {
    client_->TokenizeAsync(texts, options, {}, std::move(done));
  }));
  ExpectTokens(client_->TokenizeFuture(texts, options).get());
  const std::vector<v1::TokenizeRequest> requests = server_.tokenize_requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const v1::TokenizeRequest& request : requests) {
    ExpectProtoEq(request, ParseText<v1::TokenizeRequest>(R"pb(
                    model: "bert"
                    texts: "hello world"
                    without_special_tokens: true
                  )pb"));
  }
}

TEST_F(ClientTextTest, TokenizeErrorsCarryTheServersCodeAndMessage) {
  server_.tokenize_failures = 1000;
  server_.tokenize_error = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                        "model 'ids' has no tokenizer");
  const absl::Status expected =
      absl::FailedPreconditionError("model 'ids' has no tokenizer");
  EXPECT_EQ(client_->Tokenize({"text"}).status(), expected);
  EXPECT_EQ(Await<TokenizeResult>([&](Callback<TokenizeResult> done) {
              client_->TokenizeAsync({"text"}, {}, {}, std::move(done));
            }).status(),
            expected);
  EXPECT_EQ(client_->TokenizeFuture({"text"}).get().status(), expected);
  // FAILED_PRECONDITION is not retried: one attempt per call.
  EXPECT_EQ(server_.tokenize_requests().size(), 3u);
}

TEST_F(ClientTextTest, TokenizeIsRetriedLikeEveryCall) {
  server_.tokenize_failures = 2;
  server_.tokenize_error =
      grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full");
  ExpectTokens(client_->Tokenize({"hello world"}));
  EXPECT_EQ(server_.tokenize_requests().size(), 3u);
}

TEST_F(ClientTextTest, ModelsReportTheirTokenizerAndTextLimits) {
  server_.model = ParseText<v1::ModelInfo>(R"pb(
    name: "bert"
    config {
      tokenizer {
        kind: "wordpiece"
        file: "tokenizer.json"
        special_tokens { role: "cls" token: "[CLS]" id: 101 }
        special_tokens { role: "sep" token: "[SEP]" id: 102 }
      }
    }
    limits { max_text_bytes_per_call: 4194304 max_spans_per_input: 1024 }
  )pb");
  const auto expect_bert = [](const ModelInfo& info) {
    EXPECT_EQ(info.config.tokenizer.kind, "wordpiece");
    EXPECT_EQ(info.config.tokenizer.file, "tokenizer.json");
    ASSERT_EQ(info.config.tokenizer.special_tokens.size(), 2u);
    EXPECT_EQ(info.config.tokenizer.special_tokens[1].role, "sep");
    EXPECT_EQ(info.config.tokenizer.special_tokens[1].token, "[SEP]");
    EXPECT_EQ(info.config.tokenizer.special_tokens[1].id, 102u);
    EXPECT_EQ(info.limits.max_text_bytes_per_call, 4194304);
    EXPECT_EQ(info.limits.max_spans_per_input, 1024);
  };
  absl::StatusOr<ModelInfo> info = client_->GetModel("bert");
  ASSERT_TRUE(info.ok()) << info.status();
  expect_bert(*info);
  absl::StatusOr<ModelList> list = client_->ListModels();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->models.size(), 1u);
  expect_bert(list->models[0]);
}

}  // namespace
}  // namespace favor
