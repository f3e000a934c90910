// MetricsServer in front of a serving FavorService: a scrape of /metrics
// over HTTP on loopback has every family and the calls just made, and no
// number of idle or trickling clients holds a scrape up.
#include "server/http/metrics_server.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "gtest/gtest.h"
#include "server/metrics/metric_names.h"
#include "tests/http/http_client.h"
#include "tests/metrics/scrape.h"
#include "tests/service/fake_service_fixture.h"

namespace favor::http {
namespace {

using service::CallAttend;
using service::CallEmbed;
using service::EmbedOf;
using service::FakeServiceTest;
using service::UniformAttend;

HttpServer::Options LoopbackOptions() {
  HttpServer::Options options = MetricsServer::DefaultOptions();
  options.port = 0;
  return options;
}

TEST_F(FakeServiceTest, MetricsScrapeHasEveryFamily) {
  Start();
  auto http = MetricsServer::Create(LoopbackOptions(), &server_->metrics());
  ASSERT_TRUE(http.ok()) << http.status();
  ASSERT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1, 2}})).ok());
  ASSERT_TRUE(CallAttend(server_->stub(), UniformAttend("softmax")).ok());
  server_->metrics().SetModelInfo(
      {"fake", "fake-1", "favor+", "cpu", "float32"});
  auto scraped = metrics::scrape::HttpGet((*http)->port(), "/metrics");
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_EQ(scraped->status_code, 200);
  for (absl::string_view family :
       {metrics::kRequestDurationSeconds, metrics::kQueueDurationSeconds,
        metrics::kComputeDurationSeconds, metrics::kBatchSizeRequests,
        metrics::kBatchSizeTokens, metrics::kInputLengthTokens,
        metrics::kQueueDepth, metrics::kRequestsInFlight, metrics::kModelInfo,
        metrics::kRequestsTotal, metrics::kTokensProcessedTotal}) {
    EXPECT_NE(scraped->body.find(absl::StrCat("# TYPE ", family, " ")),
              std::string::npos)
        << family;
  }
  EXPECT_EQ(metrics::scrape::FindSample(
                scraped->body, metrics::kRequestsTotal,
                {{"model", "fake"}, {"method", "Embed"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(metrics::scrape::FindSample(
                scraped->body, metrics::kRequestsTotal,
                {{"model", "(none)"}, {"method", "Attend"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(
      metrics::scrape::FindSample(scraped->body, metrics::kTokensProcessedTotal,
                                  {{"model", "fake"}}),
      2);
  auto missing = metrics::scrape::HttpGet((*http)->port(), "/other");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status_code, 404);
}

// favor_queue_depth counts the calls waiting for the model: not one that the
// model is computing, and none once all are answered (docs/deployment.md
// suggests autoscaling GPU replicas on it, so a stale value would keep
// replicas up).
TEST_F(FakeServiceTest, QueueDepthCountsTheCallsWaiting) {
  service::FavorService::Options options;
  options.embed_batching.num_workers = 1;
  options.embed_batching.max_batch_requests = 1;
  Start(options);
  const auto depth = [&] {
    return metrics::scrape::FindSample(server_->metrics().SerializeText(),
                                       metrics::kQueueDepth,
                                       {{"model", "fake"}});
  };
  const auto depth_becomes = [&](double want) {
    return service::WaitUntil([&] { return depth() == want; },
                              absl::Seconds(10));
  };
  model_.Hold();
  std::vector<std::thread> callers;
  std::vector<grpc::Status> statuses(3);
  const auto call = [&](int i) {
    callers.emplace_back([&, i] {
      statuses[i] = CallEmbed(server_->stub(), EmbedOf({{1, 2}}));
    });
  };
  call(0);
  model_.WaitForCalls(1);
  EXPECT_TRUE(depth_becomes(0)) << "computing, not waiting: " << depth().value_or(-1);
  call(1);
  call(2);
  EXPECT_TRUE(depth_becomes(2)) << depth().value_or(-1);
  model_.Release();
  for (auto& caller : callers) caller.join();
  for (const grpc::Status& status : statuses) {
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_TRUE(depth_becomes(0)) << depth().value_or(-1);
}

// Connections that send nothing, or only part of a request, cost the server
// a socket each and never a thread: a scrape beside 64 of them is answered
// at once (the hand-written server it replaces took 20 s beside 4).
TEST_F(FakeServiceTest, IdleAndTricklingClientsDoNotDelayAScrape) {
  Start();
  auto http = MetricsServer::Create(LoopbackOptions(), &server_->metrics());
  ASSERT_TRUE(http.ok()) << http.status();
  boost::asio::io_context io;
  const boost::asio::ip::tcp::endpoint endpoint(
      boost::asio::ip::make_address("127.0.0.1"),
      static_cast<unsigned short>((*http)->port()));
  std::vector<boost::asio::ip::tcp::socket> idle;
  for (int i = 0; i < 64; ++i) {
    idle.emplace_back(io).connect(endpoint);
    // Every other one starts a request and never finishes it.
    if (i % 2 == 1) {
      boost::asio::write(idle.back(),
                         boost::asio::buffer(std::string("GET /metrics")));
    }
  }
  const absl::Time start = absl::Now();
  auto scraped = metrics::scrape::HttpGet((*http)->port(), "/metrics");
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_EQ(scraped->status_code, 200);
  EXPECT_LT(took, absl::Seconds(1));
}

// HEAD answers a scrape's headers without its body; other methods get 405
// with Allow.
TEST_F(FakeServiceTest, MetricsHeadAndOtherMethods) {
  Start();
  auto http = MetricsServer::Create(LoopbackOptions(), &server_->metrics());
  ASSERT_TRUE(http.ok()) << http.status();
  std::vector<testing::FetchOptions> requests(2);
  requests[0].method = "HEAD";
  requests[0].target = requests[1].target = "/metrics";
  auto answers = testing::FetchInOrder((*http)->port(), requests);
  ASSERT_TRUE(answers.ok()) << answers.status();
  EXPECT_EQ((*answers)[0].status, 200);
  EXPECT_EQ((*answers)[0].body, "");
  ASSERT_FALSE((*answers)[1].body.empty());
  EXPECT_EQ((*answers)[0].Header("Content-Length"),
            std::to_string((*answers)[1].body.size()));
  testing::FetchOptions post;  // no body: the server reads none (413)
  post.method = "POST";
  post.target = "/metrics";
  auto posted = testing::Fetch((*http)->port(), post);
  ASSERT_TRUE(posted.ok()) << posted.status();
  EXPECT_EQ(posted->status, 405);
  EXPECT_EQ(posted->Header("Allow"), "GET, HEAD");
}

// A client that trickles its request is closed when the request read time
// runs out, however steadily it sends.
TEST(MetricsServerTest, ARequestMustArriveWithinTheReadTime) {
  HttpServer::Options options = LoopbackOptions();
  options.max_request_read_time = absl::Milliseconds(300);
  auto http = MetricsServer::Create(options, metrics::Metrics::Noop());
  ASSERT_TRUE(http.ok()) << http.status();
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"),
                  static_cast<unsigned short>((*http)->port())});
  boost::system::error_code error;
  const absl::Time start = absl::Now();
  for (int i = 0; i < 40 && !error; ++i) {
    boost::asio::write(socket, boost::asio::buffer(std::string("X")), error);
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(error) << "still open after 2 s";
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

}  // namespace
}  // namespace favor::http
