// Cross-origin requests (server/http/cors.h) through the whole HTTP API:
// preflights, the headers of ordinary answers and of refusals, and the
// policy's checks of its origins.
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http/cors.h"
#include "tests/http/api_fixture.h"

namespace favor::http {
namespace {

using ::testing::HasSubstr;

constexpr char kApp[] = "https://app.example.com";

// A browser's preflight of a POST to /v1/embeddings from `origin`, asking
// for the headers npm openai sends from a page.
testing::FetchOptions Preflight(const std::string& origin,
                                const std::string& target = "/v1/embeddings",
                                const std::string& method = "POST") {
  testing::FetchOptions options;
  options.method = "OPTIONS";
  options.target = target;
  options.headers = {
      {"Origin", origin},
      {"Access-Control-Request-Method", method},
      {"Access-Control-Request-Headers",
       "authorization,content-type,x-stainless-os"}};
  return options;
}

testing::FetchOptions Embeddings(const std::string& origin,
                                 const std::string& key = "") {
  testing::FetchOptions options;
  options.method = "POST";
  options.target = "/v1/embeddings";
  options.body = R"({"input":[[1,2,3]]})";
  options.headers = {{"Origin", origin}, {"Content-Type", "application/json"}};
  if (!key.empty()) options.headers.push_back({"Authorization", key});
  return options;
}

class CorsTest : public ApiTest {
 protected:
  void StartWithOrigins(std::vector<std::string> origins,
                        std::vector<std::string> tokens = {}) {
    ApiHandler::Options api;
    api.cors_allow_origins = std::move(origins);
    api.bearer_tokens = std::move(tokens);
    Start(service::FavorService::Options(), {}, api);
  }
};

TEST_F(CorsTest, OffByDefault) {
  Start();
  const auto preflight = testing::Fetch(port(), Preflight(kApp));
  ExpectError(preflight, 405);
  const auto got = testing::Fetch(port(), Embeddings(kApp));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(got->Header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(got->Header("Vary"), "");
}

TEST_F(CorsTest, ListedOriginPreflightsThenCallsOnOneConnection) {
  StartWithOrigins({"https://other.example.org", kApp});
  // The preflight keeps the connection open for the call it is for.
  const auto answers =
      testing::FetchInOrder(port(), {Preflight(kApp), Embeddings(kApp)});
  ASSERT_TRUE(answers.ok()) << answers.status();
  const testing::Fetched& preflight = (*answers)[0];
  EXPECT_EQ(preflight.status, 204) << preflight.body;
  EXPECT_EQ(preflight.body, "");
  EXPECT_EQ(preflight.Header("Content-Length"), "");
  EXPECT_EQ(preflight.Header("Access-Control-Allow-Origin"), kApp);
  EXPECT_EQ(preflight.Header("Access-Control-Allow-Methods"), "POST");
  EXPECT_EQ(preflight.Header("Access-Control-Allow-Headers"),
            "authorization,content-type,x-stainless-os");
  EXPECT_EQ(preflight.Header("Access-Control-Max-Age"), "600");
  EXPECT_EQ(preflight.Header("Vary"), "Origin");
  const testing::Fetched& call = (*answers)[1];
  EXPECT_EQ(call.status, 200) << call.body;
  EXPECT_EQ(call.Header("Access-Control-Allow-Origin"), kApp);
  EXPECT_EQ(call.Header("Access-Control-Expose-Headers"),
            "Retry-After, Server-Timing, x-queue-time, x-inference-time, "
            "x-compute-tokens, X-Request-Id");
  EXPECT_EQ(call.Header("Vary"), "Origin");
  // Origins are compared without regard to ASCII case; the answer names
  // the origin as the browser sent it.
  const auto upper =
      testing::Fetch(port(), Preflight("HTTPS://APP.EXAMPLE.COM"));
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(upper->status, 204);
  EXPECT_EQ(upper->Header("Access-Control-Allow-Origin"),
            "HTTPS://APP.EXAMPLE.COM");
  // GET routes admit GET and HEAD.
  const auto health =
      testing::Fetch(port(), Preflight(kApp, "/health", "GET"));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 204);
  EXPECT_EQ(health->Header("Access-Control-Allow-Methods"), "GET, HEAD");
}

TEST_F(CorsTest, UnlistedOriginsAndOtherMethodsAreRefused) {
  StartWithOrigins({kApp});
  auto error = ExpectError(
      testing::Fetch(port(), Preflight("https://evil.example.net")), 403);
  EXPECT_THAT(error["message"].get<std::string>(),
              HasSubstr("https://evil.example.net"));
  // A subdomain or another port is another origin.
  ExpectError(testing::Fetch(port(), Preflight("https://x.app.example.com")),
              403);
  ExpectError(testing::Fetch(port(), Preflight("https://app.example.com:8443")),
              403);
  error = ExpectError(testing::Fetch(port(), Preflight(kApp, "/v1/embeddings",
                                                       "DELETE")),
                      403);
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("DELETE"));
  // An unlisted origin's call is answered (the browser hides it from the
  // page), without the header that would let the page read it.
  const auto got =
      testing::Fetch(port(), Embeddings("https://evil.example.net"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->Header("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(got->Header("Vary"), "Origin");
  // OPTIONS that is not a preflight is a method the route lacks.
  testing::FetchOptions bare;
  bare.method = "OPTIONS";
  bare.target = "/v1/embeddings";
  ExpectError(testing::Fetch(port(), bare), 405);
  ExpectStillServing();
}

TEST_F(CorsTest, PreflightsNeedNoKeyAndRefusalsAreReadable) {
  StartWithOrigins({kApp}, {"secret-token"});
  const auto preflight = testing::Fetch(port(), Preflight(kApp));
  ASSERT_TRUE(preflight.ok()) << preflight.status();
  EXPECT_EQ(preflight->status, 204) << preflight->body;
  // The page may read why its call failed.
  const auto refused = testing::Fetch(port(), Embeddings(kApp));
  ExpectError(refused, 401);
  EXPECT_EQ(refused->Header("Access-Control-Allow-Origin"), kApp);
  const auto got =
      testing::Fetch(port(), Embeddings(kApp, "Bearer secret-token"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200) << got->body;
  EXPECT_EQ(got->Header("Access-Control-Allow-Origin"), kApp);
}

TEST_F(CorsTest, AnyOriginIsAStarWithoutVary) {
  StartWithOrigins({"*"});
  const auto preflight =
      testing::Fetch(port(), Preflight("http://localhost:3000"));
  ASSERT_TRUE(preflight.ok()) << preflight.status();
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->Header("Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(preflight->Header("Vary"), "");
  const auto got = testing::Fetch(port(), Embeddings("http://localhost:3000"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->Header("Access-Control-Allow-Origin"), "*");
  // Without an Origin (not a browser's cross-origin call): no CORS header.
  const auto plain = PostEmbeddings(R"({"input":[[1]]})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->Header("Access-Control-Allow-Origin"), "");
}

TEST(CorsPolicyTest, ValidateTakesOriginsOnly) {
  for (const std::vector<std::string>& good :
       std::vector<std::vector<std::string>>{
           {},
           {"*"},
           {"https://app.example.com"},
           {"http://localhost:3000", "https://[::1]:8443"}}) {
    EXPECT_TRUE(CorsPolicy::Validate(good).ok()) << good.size();
  }
  for (const std::string bad :
       {"https://app.example.com/", "app.example.com", "https://",
        "https://a b.com", "https://app.example.com/path", "ftp://x.com",
        "https://*.example.com", ""}) {
    const absl::Status status = CorsPolicy::Validate({bad});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr(bad)) << bad;
  }
  EXPECT_EQ(CorsPolicy::Validate({"*", "https://app.example.com"}).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace favor::http
