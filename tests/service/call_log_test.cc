// A gRPC call's request id and access-log line (server/service/call_log.h)
// through the real service on loopback, with a fake model: lines captured
// and read back as JSON.
#include "server/service/call_log.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/service/fake_service_fixture.h"

namespace favor::service {
namespace {

using Json = nlohmann::json;

// Every line the service writes.
class CapturedLog {
 public:
  CapturedLog()
      : log_({AccessLog::Format::kJson, absl::InfiniteDuration()},
             [this](bool, absl::string_view line) {
               absl::MutexLock lock(&mu_);
               lines_.push_back(Json::parse(line));
             }) {}
  AccessLog* log() { return &log_; }
  std::vector<Json> lines() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }

 private:
  absl::Mutex mu_;
  std::vector<Json> lines_ ABSL_GUARDED_BY(mu_);
  AccessLog log_;
};

class CallLogTest : public FakeServiceTest {
 protected:
  void StartLogged() {
    FavorService::Options options;
    options.access_log = captured_.log();
    Start(options);
  }
  // The id the server echoed in its initial metadata.
  static std::string EchoedId(const grpc::ClientContext& context) {
    const auto& metadata = context.GetServerInitialMetadata();
    auto it = metadata.find("x-request-id");
    if (it == metadata.end()) return "";
    return std::string(it->second.data(), it->second.size());
  }
  CapturedLog captured_;
};

TEST_F(CallLogTest, EmbedKeepsTheIdEchoesItAndLogsItsUsage) {
  StartLogged();
  grpc::ClientContext context;
  context.AddMetadata("x-request-id", "call-1");
  context.AddMetadata(
      "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  v1::EmbedResponse response;
  ASSERT_TRUE(server_->stub()
                  .Embed(&context, EmbedOf({{1, 2, 3}, {4, 5}}), &response)
                  .ok());
  EXPECT_EQ(EchoedId(context), "call-1");
  const std::vector<Json> lines = captured_.lines();
  ASSERT_EQ(lines.size(), 1);
  const Json& line = lines[0];
  EXPECT_EQ(line["request_id"], "call-1");
  EXPECT_EQ(line["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(line["protocol"], "grpc");
  EXPECT_EQ(line["method"], "/favor.v1.Favor/Embed");
  EXPECT_EQ(line["model"], "fake");
  EXPECT_EQ(line["inputs"], 2);
  EXPECT_EQ(line["tokens"], response.num_tokens());
  EXPECT_EQ(response.num_tokens(), 5);
  EXPECT_DOUBLE_EQ(line["queue_ms"].get<double>(),
                   response.timing().queue_time_micros() / 1e3);
  EXPECT_DOUBLE_EQ(line["compute_ms"].get<double>(),
                   response.timing().compute_time_micros() / 1e3);
  EXPECT_EQ(line["grpc_status"], "OK");
  EXPECT_THAT(line["peer"].get<std::string>(),
              ::testing::HasSubstr("127.0.0.1"));
}

TEST_F(CallLogTest, AnIdIsMadeWhenNoneIsSent) {
  StartLogged();
  grpc::ClientContext context;
  v1::EmbedResponse response;
  ASSERT_TRUE(server_->stub().Embed(&context, EmbedOf({{1}}), &response).ok());
  const std::string id = EchoedId(context);
  EXPECT_THAT(id, ::testing::MatchesRegex("[0-9a-f]{32}"));
  ASSERT_EQ(captured_.lines().size(), 1);
  EXPECT_EQ(captured_.lines()[0]["request_id"], id);
  EXPECT_FALSE(captured_.lines()[0].contains("traceparent"));
}

TEST_F(CallLogTest, MalformedIdsAreRefusedAndLogged) {
  StartLogged();
  for (const std::string& id :
       {std::string("has space"), std::string(kMaxRequestIdBytes + 1, 'a')}) {
    grpc::ClientContext context;
    context.AddMetadata("x-request-id", id);
    v1::EmbedResponse response;
    const grpc::Status status =
        server_->stub().Embed(&context, EmbedOf({{1}}), &response);
    EXPECT_EQ(status.error_code(), grpc::INVALID_ARGUMENT) << id;
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr("request id"));
  }
  grpc::ClientContext context;
  context.AddMetadata("traceparent",
                      std::string(kMaxTraceparentBytes + 1, '0'));
  v1::EmbedResponse response;
  EXPECT_EQ(
      server_->stub().Embed(&context, EmbedOf({{1}}), &response).error_code(),
      grpc::INVALID_ARGUMENT);
  const std::vector<Json> lines = captured_.lines();
  ASSERT_EQ(lines.size(), 3);
  for (const Json& line : lines) {
    EXPECT_EQ(line["grpc_status"], "INVALID_ARGUMENT");
    EXPECT_FALSE(line.contains("tokens"));
  }
  EXPECT_TRUE(CallEmbed(server_->stub(), EmbedOf({{1}})).ok());
}

// The HTTP front's calls write no line: they answer usage trailers, which
// ReadUsageTrailers reads back.
TEST_F(CallLogTest, InProcessCallsAnswerUsageTrailersInsteadOfALine) {
  StartLogged();
  grpc::ClientContext context;
  context.AddMetadata(std::string(kInProcessKeyMetadata),
                      server_->service().in_process_key());
  v1::EmbedResponse response;
  ASSERT_TRUE(server_->stub()
                  .Embed(&context, EmbedOf({{1, 2}, {3}, {4, 5, 6}}), &response)
                  .ok());
  EXPECT_TRUE(captured_.lines().empty());
  AccessRecord record;
  ReadUsageTrailers(context.GetServerTrailingMetadata(), &record);
  EXPECT_EQ(record.model, "fake");
  EXPECT_EQ(record.inputs, 3);
  EXPECT_EQ(record.tokens, 6);
  EXPECT_EQ(record.queue_time,
            absl::Microseconds(response.timing().queue_time_micros()));
  EXPECT_EQ(record.compute_time,
            absl::Microseconds(response.timing().compute_time_micros()));
}

}  // namespace
}  // namespace favor::service
