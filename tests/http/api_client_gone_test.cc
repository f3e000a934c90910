// Clients that go away (server/http/session.h, client_gone.h): an HTTP
// client that closes its connection before the answer cancels its service
// call, as a gRPC client's cancellation does, so that work queued for it
// is dropped rather than computed; a client that keeps its connection, or
// pipelines its next request behind the first, is answered as usual.
// Otherwise ten clients that gave up would have all their work computed.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/write.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/string_body.hpp"
#include "gtest/gtest.h"
#include "server/metrics/metric_names.h"
#include "tests/http/api_fixture.h"
#include "tests/metrics/scrape.h"

namespace favor::http {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

// The bytes of one embeddings request with `tokens` as its input.
std::string EmbeddingsRequest(const std::string& tokens) {
  const std::string body = absl::StrCat(R"({"input":[[)", tokens, "]]}");
  return absl::StrCat("POST /v1/embeddings HTTP/1.1\r\nHost: test\r\n",
                      "Content-Type: application/json\r\nContent-Length: ",
                      body.size(), "\r\n\r\n", body);
}

class ApiClientGoneTest : public ApiTest {
 protected:
  // One request per batch, so that each request behind the running one is
  // a batch of its own, queued until the worker frees.
  void StartOneRequestPerBatch() {
    service::FavorService::Options options;
    options.embed_batching.max_batch_requests = 1;
    Start(std::move(options));
  }

  // A connection that has sent `bytes` and reads nothing yet.
  tcp::socket Send(const std::string& bytes) {
    tcp::socket socket(io_);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"),
                                 static_cast<unsigned short>(port())));
    net::write(socket, net::buffer(bytes));
    return socket;
  }

  std::optional<double> Embeds(const std::string& code) const {
    return metrics::scrape::FindSample(
        metrics_->SerializeText(), std::string(metrics::kRequestsTotal),
        {{"model", "fake"}, {"method", "Embed"}, {"code", code}});
  }
  // Polls until favor_requests_total{Embed, code} reaches `count`.
  bool WaitForEmbeds(const std::string& code, double count) const {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (Embeds(code).value_or(0) >= count) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  net::io_context io_;
};

TEST_F(ApiClientGoneTest, AClientThatClosesCancelsItsQueuedWork) {
  StartOneRequestPerBatch();
  model_.Hold();
  tcp::socket running = Send(EmbeddingsRequest("1,2"));
  model_.WaitForCalls(1);  // computing, held
  // Behind it: two queued (no batch is formed while the worker is busy).
  tcp::socket first_queued = Send(EmbeddingsRequest("3,4"));
  tcp::socket second_queued = Send(EmbeddingsRequest("5,6"));
  absl::SleepFor(absl::Milliseconds(100));
  first_queued.close();
  second_queued.close();
  // Both are dropped at once, while the model is still held.
  ASSERT_TRUE(WaitForEmbeds("CANCELLED", 2))
      << "a queued request whose client left was not cancelled";
  model_.Release();
  boost::beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> answer;
  bhttp::read(running, buffer, answer);
  EXPECT_EQ(answer.result_int(), 200) << answer.body();
  EXPECT_EQ(model_.calls(), 1) << "work was computed for clients that left";
  ExpectStillServing();
}

TEST_F(ApiClientGoneTest, PipelinedRequestsAreAnsweredInOrder) {
  StartOneRequestPerBatch();
  model_.Hold();
  // The second request arrives while the first is answered: bytes, not
  // the end of the stream, so nothing is cancelled.
  tcp::socket socket = Send(EmbeddingsRequest("1,2"));
  model_.WaitForCalls(1);
  net::write(socket, net::buffer(EmbeddingsRequest("1,2,3")));
  absl::SleepFor(absl::Milliseconds(100));
  model_.Release();
  boost::beast::flat_buffer buffer;
  for (int tokens : {2, 3}) {
    bhttp::response<bhttp::string_body> answer;
    bhttp::read(socket, buffer, answer);
    ASSERT_EQ(answer.result_int(), 200) << answer.body();
    const nlohmann::json body = nlohmann::json::parse(answer.body());
    EXPECT_EQ(body["usage"]["prompt_tokens"], tokens);
  }
  EXPECT_EQ(Embeds("CANCELLED").value_or(0), 0);
}

}  // namespace
}  // namespace favor::http
