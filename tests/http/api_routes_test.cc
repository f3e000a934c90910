// Routing of the HTTP API (server/http/api_routes.h): every path of
// docs/http.md's table, its method, the model or RPC it carries, and the
// bounded metrics label, written here from the table rather than read from
// the code.
#include "server/http/api_routes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/metrics/metric_names.h"

namespace favor::http {
namespace {

namespace bhttp = boost::beast::http;

TEST(ApiRoutesTest, EachPathNamesItsRouteAndMethod) {
  struct Case {
    const char* target;
    RouteKind kind;
    bhttp::verb verb;
    const char* method;
  };
  const Case cases[] = {
      {"/v1/embeddings", RouteKind::kEmbeddings, bhttp::verb::post, ""},
      {"/v1/embeddings?x=1", RouteKind::kEmbeddings, bhttp::verb::post, ""},
      {"/v1/models", RouteKind::kModels, bhttp::verb::get, ""},
      {"/v1/models/default", RouteKind::kModel, bhttp::verb::get, "default"},
      {"/v1/models/a%2Fb%20c", RouteKind::kModel, bhttp::verb::get, "a/b c"},
      {"/health", RouteKind::kHealth, bhttp::verb::get, ""},
      {"/info", RouteKind::kInfo, bhttp::verb::get, ""},
      {"/info?model=m%C3%A9", RouteKind::kInfo, bhttp::verb::get, "m\xC3\xA9"},
      {"/info?x=1&model=b&y", RouteKind::kInfo, bhttp::verb::get, "b"},
      {"/v1/favor/Embed", RouteKind::kFavor, bhttp::verb::post, "Embed"},
      {"/v1/favor/GetModel?q", RouteKind::kFavor, bhttp::verb::post,
       "GetModel"},
      {"/openapi.json", RouteKind::kOpenApi, bhttp::verb::get, ""},
      {"/docs", RouteKind::kDocs, bhttp::verb::get, ""},
      {"/docs/", RouteKind::kDocs, bhttp::verb::get, "/"},
      {"/docs/swagger-ui.css", RouteKind::kDocs, bhttp::verb::get,
       "/swagger-ui.css"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    const Route route = RouteOf(c.target);
    EXPECT_EQ(route.kind, c.kind);
    EXPECT_EQ(route.verb, c.verb);
    EXPECT_EQ(route.method, c.method);
    EXPECT_FALSE(route.bad_escape);
  }
}

TEST(ApiRoutesTest, NearMissesNameNoRoute) {
  for (const char* target :
       {"", "/", "/v1", "/v1/embedding", "/v1/embeddings/", "/v1/models/",
        "/v1/favor/", "/docsx", "/healthz", "/info/x", "/openapi.yaml",
        "v1/embeddings", "/V1/embeddings"}) {
    SCOPED_TRACE(target);
    EXPECT_EQ(RouteOf(target).kind, RouteKind::kNone);
  }
}

TEST(ApiRoutesTest, AMalformedEscapeIsMarkedAndKeptAsSent) {
  for (const char* target : {"/v1/models/a%2", "/v1/models/a%zz",
                             "/v1/models/%", "/info?model=a%4"}) {
    SCOPED_TRACE(target);
    const Route route = RouteOf(target);
    EXPECT_TRUE(route.bad_escape);
    EXPECT_NE(route.method.find('%'), std::string::npos);
  }
  EXPECT_EQ(PercentDecoded("%41%62c%7e"), "Abc~");
  EXPECT_EQ(PercentDecoded("100%"), std::nullopt);
  EXPECT_EQ(PercentDecoded(""), "");
}

TEST(ApiRoutesTest, OnlyHealthTheDocumentAndItsPageNeedNoKey) {
  for (RouteKind kind :
       {RouteKind::kEmbeddings, RouteKind::kModels, RouteKind::kModel,
        RouteKind::kInfo, RouteKind::kFavor, RouteKind::kNone}) {
    EXPECT_FALSE(OpenRoute(kind));
  }
  for (RouteKind kind :
       {RouteKind::kHealth, RouteKind::kOpenApi, RouteKind::kDocs}) {
    EXPECT_TRUE(OpenRoute(kind));
  }
}

// Labels stay within kHttpRoutes whatever the target holds (a model's name,
// a query, a file under /docs), and every listed route has its path.
TEST(ApiRoutesTest, LabelsAreBoundedAndCoverEveryListedRoute) {
  const std::set<std::string> listed(std::begin(metrics::kHttpRoutes),
                                     std::end(metrics::kHttpRoutes));
  std::set<std::string> seen;
  for (const char* target :
       {"/v1/embeddings?a=b", "/v1/models", "/v1/models/anything%20at%20all",
        "/health", "/info?model=x", "/v1/favor/Embed", "/v1/favor/Attend",
        "/v1/favor/ListModels", "/v1/favor/GetModel", "/v1/favor/Tokenize",
        "/openapi.json", "/docs/index.html", "/nowhere"}) {
    SCOPED_TRACE(target);
    const std::string label = RouteLabel(RouteOf(target), target);
    EXPECT_TRUE(listed.count(label) > 0 || label == "(other)") << label;
    seen.insert(label);
  }
  for (const std::string& route : listed)
    EXPECT_TRUE(seen.count(route)) << route;
  EXPECT_EQ(RouteLabel(RouteOf("/nowhere"), "/nowhere"), "(other)");
}

}  // namespace
}  // namespace favor::http
