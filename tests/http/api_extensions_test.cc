// The HTTP API's extensions of OpenAI's shapes (docs/http.md), over real
// HTTP and real gRPC on loopback (api_fixture.h): GET /info against
// GetModel, and each bad request answered with its code and OpenAI's error
// shape while the server keeps serving.
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

nlohmann::json Ok(const absl::StatusOr<testing::Fetched>& got) {
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return {};
  EXPECT_EQ(got->status, 200) << got->body;
  return nlohmann::json::parse(got->body, nullptr, false);
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

}  // namespace
}  // namespace favor::http
