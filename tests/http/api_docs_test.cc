// GET /openapi.json and /docs (openapi_document.h, docs_page.h) through the
// HTTP API: served without a key where every other route needs one, with
// their Content-Type; the page's files from a folder made here, nothing
// outside it; 503 saying where it looked without one. The document's
// content is checked against the real server by
// tests/http/openapi_contract_test.py and an npm validator.
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/openapi_document.h"
#include "server/metrics/metric_names.h"
#include "tests/http/api_fixture.h"
#include "tests/metrics/scrape.h"

namespace favor::http {
namespace {

namespace fs = std::filesystem;

// A page folder under the test's temporary directory, and a file beside it
// that no request may reach.
class ApiDocsTest : public ApiTest {
 protected:
  void SetUp() override {
    // One folder per process: ctest runs this suite's tests in parallel
    // processes, and a shared folder was removed under another's feet.
    root_ = fs::path(::testing::TempDir()) /
            ("api_docs_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "page");
    Write(root_ / "page" / "index.html", "<html>the page</html>");
    Write(root_ / "page" / "app.js", "let x = 1;");
    Write(root_ / "page" / ".installed", "");
    Write(root_ / "secret.txt", "outside the page");
  }

  void TearDown() override {
    ApiTest::TearDown();
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  static void Write(const fs::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }

  // The API with a key, and the page from `dirs`.
  void StartWithPage(std::vector<std::string> dirs) {
    ApiHandler::Options api;
    api.bearer_tokens = {"k"};
    api.docs_page.dirs = std::move(dirs);
    service::FavorService::Options service;
    Start(std::move(service), {}, std::move(api));
  }

  absl::StatusOr<testing::Fetched> Get(const std::string& target) {
    testing::FetchOptions options;
    options.target = target;
    return testing::Fetch(port(), options);
  }

  fs::path root_;
};

TEST_F(ApiDocsTest, OpenApiDocumentIsServedWithoutAKey) {
  StartWithPage({});
  auto got = Get("/openapi.json");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->Header("Content-Type"), "application/json");
  EXPECT_TRUE(got->body == OpenApiDocument()) << "not the embedded document";
  const auto document = nlohmann::json::parse(got->body, nullptr, false);
  ASSERT_TRUE(document.is_object());
  EXPECT_EQ(document["openapi"], "3.1.0");
  // Every unary RPC has its route, derived from favor.proto.
  for (const char* method :
       {"Embed", "Attend", "ListModels", "GetModel", "Tokenize"}) {
    EXPECT_TRUE(document["paths"].contains(std::string("/v1/favor/") + method))
        << method;
  }
  // The other routes still need the key.
  ExpectError(Get("/v1/models"), 401);
}

// Every route the server counts in its metrics (metric_names.h lists
// them all) is in the document, so that a new route cannot be left out.
TEST(OpenApiDocumentTest, DescribesEveryRouteTheServerHas) {
  const auto document = nlohmann::json::parse(OpenApiDocument());
  for (absl::string_view route : metrics::kHttpRoutes) {
    EXPECT_TRUE(document["paths"].contains(std::string(route)))
        << route << " is not in server/http/openapi/openapi.yaml";
  }
}

TEST_F(ApiDocsTest, PageFilesAreServedFromTheFirstFolderWithAnIndex) {
  StartWithPage({(root_ / "none").string(), (root_ / "page").string()});
  auto page = Get("/docs");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->Header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body, "<html>the page</html>");
  auto script = Get("/docs/app.js");
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(script->status, 200);
  EXPECT_EQ(script->Header("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(script->body, "let x = 1;");
  auto slash = Get("/docs/");
  ASSERT_TRUE(slash.ok()) << slash.status();
  EXPECT_EQ(slash->status, 308);
  EXPECT_EQ(slash->Header("Location"), "../docs");
  ASSERT_TRUE(Get("/openapi.json").ok());
  // Counted under their own routes (the page's files under /docs).
  const std::string text = metrics_->SerializeText();
  const std::string total(metrics::kHttpRequestsTotal);
  using metrics::scrape::FindSample;
  EXPECT_EQ(FindSample(text, total, {{"route", "/docs"}, {"code", "200"}}), 2);
  EXPECT_EQ(
      FindSample(text, total, {{"route", "/openapi.json"}, {"code", "200"}}),
      1);
}

TEST_F(ApiDocsTest, NothingOutsideThePageIsServed) {
  StartWithPage({(root_ / "page").string()});
  for (const char* target :
       {"/docs/../secret.txt", "/docs/%2e%2e/secret.txt", "/docs/.installed",
        "/docs/page/index.html", "/docs/nope.js", "/docs//etc/passwd"}) {
    const nlohmann::json error = ExpectError(Get(target), 404);
    EXPECT_EQ(error.dump().find("outside the page"), std::string::npos);
  }
  // Only /docs and /docs/...: /docsfoo is no route.
  ExpectError(Get("/docsfoo"), 404);
  testing::FetchOptions embed;
  embed.method = "POST";
  embed.target = "/v1/embeddings";
  embed.headers = {{"Authorization", "Bearer k"}};
  embed.body = R"({"input":[[1,2,3]]})";
  auto still = testing::Fetch(port(), embed);
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ(still->status, 200) << still->body;
}

TEST_F(ApiDocsTest, WithoutThePageDocsIs503SayingWhereItLooked) {
  StartWithPage({(root_ / "none").string()});
  for (const char* target : {"/docs", "/docs/app.js"}) {
    const nlohmann::json error = ExpectError(Get(target), 503);
    EXPECT_NE(error["message"].get<std::string>().find(
                  (root_ / "none").string()),
              std::string::npos)
        << error;
  }
  auto document = Get("/openapi.json");
  ASSERT_TRUE(document.ok()) << document.status();
  EXPECT_EQ(document->status, 200);
}

TEST_F(ApiDocsTest, DocsTakeGetOnly) {
  StartWithPage({(root_ / "page").string()});
  testing::FetchOptions post;
  post.method = "POST";
  post.target = "/openapi.json";
  post.body = "{}";
  const auto got = testing::Fetch(port(), post);
  ExpectError(got, 405);
  EXPECT_EQ(got->Header("Allow"), "GET, HEAD");
}

}  // namespace
}  // namespace favor::http
