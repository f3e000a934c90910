// The HTTP API's extensions of OpenAI's shapes (docs/http.md), over real
// HTTP and real gRPC on loopback (api_fixture.h): GET /info, embedding_types,
// truncate and truncation_direction with the per-input token counts, and
// late_chunking; each against gRPC's answer to the same request, and each
// bad request answered with its code and OpenAI's error shape while the
// server keeps serving.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http/api_handler.h"
#include "tests/http/api_fixture.h"

namespace favor::http {
namespace {

using ::testing::HasSubstr;

v1::EmbedResponse GrpcEmbed(v1::Favor::Stub& stub,
                            const v1::EmbedRequest& request) {
  grpc::ClientContext context;
  v1::EmbedResponse response;
  const grpc::Status status = stub.Embed(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

nlohmann::json Ok(const absl::StatusOr<testing::Fetched>& got) {
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return {};
  EXPECT_EQ(got->status, 200) << got->body;
  return nlohmann::json::parse(got->body, nullptr, false);
}

// Bytes as the JSON integers the API answers: signed or not.
std::vector<int> Ints(const std::string& bytes, bool is_signed) {
  std::vector<int> out;
  for (const char byte : bytes) {
    out.push_back(is_signed ? static_cast<int>(static_cast<int8_t>(byte))
                            : static_cast<int>(static_cast<uint8_t>(byte)));
  }
  return out;
}

std::string Base64(const std::string& bytes) {
  return absl::Base64Escape(bytes);
}

// "the" repeated: [CLS] + n + [SEP] tokens with the fake tokenizer.
std::string Words(int n) {
  std::vector<std::string> words(static_cast<size_t>(n), "the");
  return absl::StrJoin(words, " ");
}

TEST_F(ApiTest, InfoDescribesTheModelAndTheServer) {
  ApiHandler::Options api;
  api.server_info.version = "9.8.7";
  api.server_info.git_revision = "0123abcd";
  api.server_info.memory_budget_bytes = 12345;
  api.server_info.tokenization_workers = 3;
  Start(service::FavorService::Options(), {}, api);
  grpc::ClientContext context;
  v1::GetModelResponse model;
  ASSERT_TRUE(stub_->GetModel(&context, v1::GetModelRequest(), &model).ok());
  const v1::ModelInfo& want = model.model();
  for (const char* target : {"/info", "/info?model=fake", "/info?model=fa%6Be",
                             "/info?x=1&model=fake"}) {
    testing::FetchOptions options;
    options.target = target;
    const nlohmann::json info = Ok(testing::Fetch(port(), options));
    EXPECT_EQ(info["model_id"], "fake") << target;
    EXPECT_EQ(info["model_sha"], want.revision());
    EXPECT_EQ(info["model_dtype"], want.dtype());
    EXPECT_EQ(info["model_version"], "fake-1");
    EXPECT_EQ(info["max_input_length"], want.limits().max_tokens_per_input());
    EXPECT_EQ(info["max_input_length"], 64);
    EXPECT_EQ(info["max_batch_tokens"], want.limits().max_tokens_per_batch());
    EXPECT_EQ(info["max_batch_requests"],
              want.limits().max_requests_per_batch());
    EXPECT_EQ(info["max_client_batch_size"],
              want.limits().max_inputs_per_call());
    EXPECT_EQ(info["max_concurrent_requests"],
              want.limits().max_queued_requests());
    EXPECT_EQ(info["architecture"], want.config().architecture());
    EXPECT_EQ(info["attention"]["kernel"], want.config().attention().kernel());
    EXPECT_EQ(info["attention"]["num_features"],
              want.config().attention().num_features());
    EXPECT_EQ(info["hidden_size"], 4);
    EXPECT_EQ(info["version"], "9.8.7");
    EXPECT_EQ(info["sha"], "0123abcd");
    EXPECT_EQ(info["memory_budget_bytes"], 12345);
    EXPECT_EQ(info["tokenization_workers"], 3);
    EXPECT_EQ(info["auto_truncate"], false);
    EXPECT_TRUE(info["model_type"]["embedding"]["pooling"].is_string());
  }
  testing::FetchOptions options;
  options.target = "/info?model=nope";
  const nlohmann::json missing = ExpectError(testing::Fetch(port(), options), 404);
  EXPECT_EQ(missing["code"], "model_not_found");
  options.target = "/info?model=fa%zz";
  ExpectError(testing::Fetch(port(), options), 400);
  options.method = "POST";
  options.target = "/info";
  ExpectError(testing::Fetch(port(), options), 405);
  ExpectStillServing();
}

TEST_F(ApiTest, InfoNeedsNoKeyUnlessTheOperatorAsks) {
  ApiHandler::Options api;
  api.bearer_tokens = {"secret-token"};
  Start(service::FavorService::Options(), {}, api);
  testing::FetchOptions options;
  options.target = "/info";
  EXPECT_EQ(Ok(testing::Fetch(port(), options))["model_id"], "fake");
  // The key is still checked where it is needed.
  ExpectError(PostEmbeddings(R"({"input":"the"})"), 401);
}

TEST_F(ApiTest, InfoNeedsTheKeyWhenTheOperatorAsks) {
  ApiHandler::Options api;
  api.bearer_tokens = {"secret-token"};
  api.info_requires_key = true;
  Start(service::FavorService::Options(), {}, api);
  testing::FetchOptions options;
  options.target = "/info";
  ExpectError(testing::Fetch(port(), options), 401);
  options.headers = {{"Authorization", "Bearer secret-token"}};
  EXPECT_EQ(Ok(testing::Fetch(port(), options))["model_id"], "fake");
}

TEST_F(ApiTest, EmbeddingTypesAreGrpcsQuantizedForms) {
  Start();
  v1::EmbedRequest request;
  request.add_inputs()->set_text("the cat sat");
  request.add_inputs()->set_text("on the mat");
  request.set_normalization(v1::NORMALIZATION_L2);  // the fake's are raw
  for (const v1::EmbeddingType type :
       {v1::EMBEDDING_TYPE_INT8, v1::EMBEDDING_TYPE_UINT8,
        v1::EMBEDDING_TYPE_BINARY, v1::EMBEDDING_TYPE_UBINARY}) {
    request.add_embedding_types(type);
  }
  const v1::EmbedResponse want = GrpcEmbed(*stub_, request);
  // Without FLOAT listed, gRPC answers no float values either.
  ASSERT_EQ(want.embeddings_size(), 2);
  EXPECT_TRUE(want.embeddings(0).values().empty());
  EXPECT_EQ(want.embeddings(0).quantized().int8().size(), 4u);
  EXPECT_EQ(want.embeddings(0).quantized().binary().size(), 1u);
  // The HTTP request gets the model's own normalisation, so ask gRPC again
  // without it for the same vectors.
  request.clear_normalization();
  const v1::EmbedResponse raw = GrpcEmbed(*stub_, request);
  const nlohmann::json json = Ok(PostEmbeddings(
      R"({"input":["the cat sat","on the mat"],)"
      R"("embedding_types":["int8","uint8","binary","ubinary"]})"));
  ASSERT_EQ(json["data"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& item = json["data"][i];
    const v1::QuantizedEmbedding& q = raw.embeddings(i).quantized();
    EXPECT_FALSE(item.contains("embedding")) << item;
    EXPECT_FALSE(item["embeddings"].contains("float")) << item;
    EXPECT_EQ(item["embeddings"]["int8"], Ints(q.int8(), true));
    EXPECT_EQ(item["embeddings"]["uint8"], Ints(q.uint8(), false));
    EXPECT_EQ(item["embeddings"]["binary"], Ints(q.binary(), true));
    EXPECT_EQ(item["embeddings"]["ubinary"], Ints(q.ubinary(), false));
  }
  // "float" listed: both `embedding` and `embeddings.float`; base64: the
  // bytes.
  const nlohmann::json b64 = Ok(PostEmbeddings(
      R"({"input":["the cat sat","on the mat"],"encoding_format":"base64",)"
      R"("embedding_types":["ubinary","float","int8"]})"));
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& item = b64["data"][i];
    const v1::QuantizedEmbedding& q = raw.embeddings(i).quantized();
    EXPECT_EQ(item["embeddings"]["int8"], Base64(q.int8()));
    EXPECT_EQ(item["embeddings"]["ubinary"], Base64(q.ubinary()));
    EXPECT_FALSE(item["embeddings"].contains("uint8"));
    EXPECT_EQ(item["embeddings"]["float"], item["embedding"]);
    std::string floats;
    ASSERT_TRUE(absl::Base64Unescape(item["embedding"].get<std::string>(),
                                     &floats));
    EXPECT_EQ(floats.size(), 16u);
  }
  const nlohmann::json floats = Ok(PostEmbeddings(
      R"({"input":"the cat sat","embedding_types":["float"]})"));
  EXPECT_EQ(floats["data"][0]["embedding"],
            floats["data"][0]["embeddings"]["float"]);
  EXPECT_EQ(floats["data"][0]["embedding"].size(), 4u);
  // Without embedding_types, or with an empty list (proto3 cannot tell
  // them apart), no `embeddings`.
  for (const char* body : {R"({"input":"the cat"})",
                           R"({"input":"the cat","embedding_types":[]})"}) {
    const nlohmann::json plain = Ok(PostEmbeddings(body));
    EXPECT_FALSE(plain["data"][0].contains("embeddings")) << plain;
    EXPECT_EQ(plain["data"][0]["embedding"].size(), 4u) << plain;
  }
}

TEST_F(ApiTest, BadEmbeddingTypesAreRefused) {
  Start();
  for (const char* body :
       {R"({"input":"the","embedding_types":["int4"]})",
        R"({"input":"the","embedding_types":["int8","int8"]})",
        R"({"input":"the","embedding_types":[8]})"}) {
    const nlohmann::json error = ExpectError(PostEmbeddings(body), 400);
    EXPECT_EQ(error["type"], "invalid_request_error") << body;
  }
  EXPECT_EQ(ExpectError(PostEmbeddings(
                            R"({"input":"the","embedding_types":["int4"]})"),
                        400)["param"],
            "embedding_types");
  // gRPC: a repeated or unknown type names its index.
  v1::EmbedRequest request;
  request.add_inputs()->set_text("the");
  request.add_embedding_types(v1::EMBEDDING_TYPE_INT8);
  request.add_embedding_types(v1::EMBEDDING_TYPE_INT8);
  grpc::ClientContext context;
  v1::EmbedResponse response;
  grpc::Status status = stub_->Embed(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("embedding_types[1]"));
  request.set_embedding_types(1, static_cast<v1::EmbeddingType>(42));
  grpc::ClientContext again;
  status = stub_->Embed(&again, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ExpectStillServing();
}

TEST_F(ApiTest, EveryAnswerSaysWhatTruncationDid) {
  Start();
  // 70 words: 72 tokens, 8 over the fake's 64; its first and last words
  // differ, so that keeping either end gives a different embedding.
  const std::string long_text = absl::StrCat("cat ", Words(68), " mat");
  const struct {
    std::string extra;
    v1::Truncation truncation;
  } cases[] = {
      {R"("truncate":true)", v1::TRUNCATION_RIGHT},
      {R"("truncate":true,"truncation_direction":"right")",
       v1::TRUNCATION_RIGHT},
      {R"("truncate":true,"truncation_direction":"Right")",
       v1::TRUNCATION_RIGHT},
      {R"("truncate":true,"truncation_direction":"left")", v1::TRUNCATION_LEFT},
      {R"("truncate":true,"truncation_direction":"Left")", v1::TRUNCATION_LEFT},
  };
  for (const auto& c : cases) {
    const nlohmann::json json = Ok(PostEmbeddings(absl::StrCat(
        R"({"input":[")", long_text, R"(","the cat"],)", c.extra, "}")));
    v1::EmbedRequest request;
    request.add_inputs()->set_text(long_text);
    request.add_inputs()->set_text("the cat");
    request.set_truncation(c.truncation);
    const v1::EmbedResponse want = GrpcEmbed(*stub_, request);
    ASSERT_EQ(json["inputs"].size(), 2u) << json;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(json["inputs"][i]["index"], i);
      EXPECT_EQ(json["inputs"][i]["tokens"], want.embeddings(i).num_tokens());
      EXPECT_EQ(json["inputs"][i]["truncated_tokens"],
                want.embeddings(i).num_truncated_tokens());
      EXPECT_EQ(json["data"][i]["embedding"].get<std::vector<float>>(),
                std::vector<float>(want.embeddings(i).values().begin(),
                                   want.embeddings(i).values().end()))
          << c.extra;
    }
    EXPECT_EQ(json["inputs"][0]["tokens"], 64);
    EXPECT_EQ(json["inputs"][0]["truncated_tokens"], 8);
    EXPECT_EQ(json["inputs"][1]["truncated_tokens"], 0);
    EXPECT_EQ(json["usage"]["prompt_tokens"], 64 + 4) << c.extra;
  }
  // Left and right keep different ends ("cat" is id 6, "mat" 9).
  const nlohmann::json right = Ok(PostEmbeddings(absl::StrCat(
      R"({"input":")", long_text, R"(","truncate":true})")));
  const nlohmann::json left = Ok(PostEmbeddings(
      absl::StrCat(R"({"input":")", long_text,
                   R"(","truncate":true,"truncation_direction":"left"})")));
  EXPECT_NE(right["data"][0]["embedding"], left["data"][0]["embedding"]);
  // Without truncate, or with it false: refused, as before; the direction
  // alone changes nothing (as in text-embeddings-inference).
  for (const char* extra : {"", R"(,"truncate":false)",
                            R"(,"truncation_direction":"left")"}) {
    const nlohmann::json error = ExpectError(
        PostEmbeddings(absl::StrCat(R"({"input":")", long_text, "\"", extra,
                                    "}")),
        400);
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("64")) << extra;
  }
  // An answer without truncation reports its counts too, every time.
  const nlohmann::json plain = Ok(PostEmbeddings(R"({"input":[[5,6,7]]})"));
  EXPECT_EQ(plain["inputs"],
            nlohmann::json::parse(
                R"([{"index":0,"tokens":3,"truncated_tokens":0}])"));
  const nlohmann::json bad = ExpectError(
      PostEmbeddings(
          R"({"input":"the","truncate":true,"truncation_direction":"up"})"),
      400);
  EXPECT_EQ(bad["param"], "truncation_direction");
  ExpectStillServing();
}

TEST_F(ApiTest, LateChunkingAnswersGrpcsSpans) {
  Start();
  const nlohmann::json json = Ok(PostEmbeddings(
      R"({"input":["the cat sat","on the mat","."],"late_chunking":true,)"
      R"("embedding_types":["float","int8"]})"));
  // The same document through gRPC: one text, one span per chunk, joined by
  // single spaces.
  v1::EmbedRequest request;
  v1::EmbedInput* input = request.add_inputs();
  input->set_text("the cat sat on the mat .");
  for (const auto& [begin, end] :
       std::vector<std::pair<int, int>>{{0, 11}, {12, 22}, {23, 24}}) {
    v1::Span* span = input->add_spans();
    span->set_begin(begin);
    span->set_end(end);
  }
  request.add_embedding_types(v1::EMBEDDING_TYPE_FLOAT);
  request.add_embedding_types(v1::EMBEDDING_TYPE_INT8);
  const v1::EmbedResponse want = GrpcEmbed(*stub_, request);
  ASSERT_EQ(want.embeddings(0).spans_size(), 3);
  ASSERT_EQ(json["data"].size(), 3u) << json;
  ASSERT_EQ(json["inputs"].size(), 3u) << json;
  EXPECT_EQ(json["usage"]["prompt_tokens"], want.num_tokens());
  EXPECT_EQ(json["usage"]["prompt_tokens"], 9);  // [CLS] 7 words [SEP]
  for (int i = 0; i < 3; ++i) {
    const v1::SpanEmbedding& span = want.embeddings(0).spans(i);
    EXPECT_EQ(json["data"][i]["index"], i);
    EXPECT_EQ(json["data"][i]["embedding"].get<std::vector<float>>(),
              std::vector<float>(span.values().begin(), span.values().end()));
    EXPECT_EQ(json["data"][i]["embeddings"]["int8"],
              Ints(span.quantized().int8(), true));
    EXPECT_EQ(json["inputs"][i]["tokens"], span.num_tokens());
    EXPECT_EQ(json["inputs"][i]["truncated_tokens"], 0);
  }
  EXPECT_EQ(json["inputs"][0]["tokens"], 3);
  EXPECT_EQ(json["inputs"][2]["tokens"], 1);
}

TEST_F(ApiTest, LateChunkingRefusesWhatItCannotChunk) {
  Start();
  const std::string long_chunk = Words(40);
  const struct {
    std::string body;
    std::string message;
  } cases[] = {
      {R"({"input":"the cat sat","late_chunking":true})", "two or more"},
      {R"({"input":["the cat sat"],"late_chunking":true})", "two or more"},
      {R"({"input":[[5,6],[7,8]],"late_chunking":true})", "not token ids"},
      {R"({"input":["the cat","sat"],"late_chunking":true,"truncate":true})",
       "cannot be truncated"},
      // 2 x 40 words and the frame: 82 tokens, over the fake's 64.
      {absl::StrCat(R"({"input":[")", long_chunk, R"(",")", long_chunk,
                    R"("],"late_chunking":true})"),
       "64"},
  };
  for (const auto& c : cases) {
    const nlohmann::json error = ExpectError(PostEmbeddings(c.body), 400);
    EXPECT_EQ(error["type"], "invalid_request_error") << c.body;
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(c.message))
        << c.body;
  }
  // false is OpenAI's answer, as without the field.
  const nlohmann::json off = Ok(PostEmbeddings(
      R"({"input":["the cat","sat"],"late_chunking":false})"));
  EXPECT_EQ(off["data"].size(), 2u);
  ExpectStillServing();
}

}  // namespace
}  // namespace favor::http
