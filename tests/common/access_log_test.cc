// The access log's lines, read back by a JSON parser other than the one that
// wrote them (protobuf's, into a google.protobuf.Struct).
#include "server/common/access_log.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace favor {
namespace {

using ::google::protobuf::Struct;
using ::testing::HasSubstr;
using ::testing::Not;

Struct Parse(const std::string& line) {
  Struct parsed;
  const auto status =
      google::protobuf::util::JsonStringToMessage(line, &parsed);
  EXPECT_TRUE(status.ok()) << status << "\n" << line;
  return parsed;
}

AccessRecord EmbedCall() {
  AccessRecord record;
  absl::Time time;
  std::string error;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, "2026-11-28T14:05:06.789Z",
                              &time, &error));
  record.time = time;
  record.request_id = "req-1";
  record.traceparent =
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  record.protocol = "grpc";
  record.route = "/favor.v1.Favor/Embed";
  record.model = "default";
  record.inputs = 3;
  record.tokens = 42;
  record.queue_time = absl::Microseconds(1500);
  record.compute_time = absl::Microseconds(12345);
  record.duration = absl::Microseconds(20001);
  record.grpc_status = "OK";
  record.peer = "ipv4:127.0.0.1:5555";
  return record;
}

AccessLog::Options Json() {
  AccessLog::Options options;
  options.format = AccessLog::Format::kJson;
  return options;
}

TEST(AccessLogTest, JsonLineHasEveryFieldWithItsValue) {
  const std::string line = AccessLog::FormatLine(EmbedCall(), Json());
  EXPECT_EQ(line.front(), '{');
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const Struct parsed = Parse(line);
  const auto& f = parsed.fields();
  EXPECT_EQ(f.at("time").string_value(), "2026-11-28T14:05:06.789Z");
  EXPECT_EQ(f.at("level").string_value(), "info");
  EXPECT_EQ(f.at("request_id").string_value(), "req-1");
  EXPECT_EQ(f.at("traceparent").string_value(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(f.at("protocol").string_value(), "grpc");
  EXPECT_EQ(f.at("method").string_value(), "/favor.v1.Favor/Embed");
  EXPECT_EQ(f.at("model").string_value(), "default");
  EXPECT_EQ(f.at("inputs").number_value(), 3);
  EXPECT_EQ(f.at("tokens").number_value(), 42);
  EXPECT_DOUBLE_EQ(f.at("queue_ms").number_value(), 1.5);
  EXPECT_DOUBLE_EQ(f.at("compute_ms").number_value(), 12.345);
  EXPECT_DOUBLE_EQ(f.at("duration_ms").number_value(), 20.001);
  EXPECT_EQ(f.at("grpc_status").string_value(), "OK");
  EXPECT_EQ(f.at("peer").string_value(), "ipv4:127.0.0.1:5555");
  EXPECT_EQ(f.count("http_status"), 0);
  EXPECT_EQ(f.count("route"), 0);
}

TEST(AccessLogTest, HttpLineSaysRouteAndStatusAndLeavesOutWhatItHasNot) {
  AccessRecord record;
  record.request_id = "r";
  record.protocol = "http";
  record.route = "/health";
  record.http_status = 503;
  const Struct parsed = Parse(AccessLog::FormatLine(record, Json()));
  const auto& f = parsed.fields();
  EXPECT_EQ(f.at("route").string_value(), "/health");
  EXPECT_EQ(f.at("http_status").number_value(), 503);
  for (const char* absent :
       {"method", "model", "inputs", "tokens", "queue_ms", "compute_ms",
        "grpc_status", "peer", "traceparent"}) {
    EXPECT_EQ(f.count(absent), 0) << absent;
  }
}

TEST(AccessLogTest, SlowCallsAreWarnings) {
  AccessLog::Options options = Json();
  options.slow_call_threshold = absl::Milliseconds(20);
  AccessRecord record = EmbedCall();  // 20.001 ms
  EXPECT_EQ(Parse(AccessLog::FormatLine(record, options))
                .fields()
                .at("level")
                .string_value(),
            "warning");
  record.duration = absl::Milliseconds(20);
  EXPECT_EQ(Parse(AccessLog::FormatLine(record, options))
                .fields()
                .at("level")
                .string_value(),
            "info");
  std::vector<std::pair<bool, std::string>> lines;
  AccessLog log(options, [&](bool warning, absl::string_view line) {
    lines.emplace_back(warning, std::string(line));
  });
  log.Write(EmbedCall());
  log.Write(record);
  ASSERT_EQ(lines.size(), 2);
  EXPECT_TRUE(lines[0].first);
  EXPECT_FALSE(lines[1].first);
}

// Quotes, backslashes, control bytes, bytes that are not UTF-8 and
// characters outside the BMP survive the trip through JSON (the invalid
// bytes as U+FFFD), and a huge field is cut.
TEST(AccessLogTest, HostileFieldsAreEscapedAndBounded) {
  AccessRecord record = EmbedCall();
  record.model = "a\"b\\c\nd\te\x01 \xff\xfe g\xf0\x9f\x98\x80";
  const Struct parsed = Parse(AccessLog::FormatLine(record, Json()));
  const auto& f = parsed.fields();
  EXPECT_EQ(f.at("model").string_value(),
            "a\"b\\c\nd\te\x01 \xef\xbf\xbd\xef\xbf\xbd g\xf0\x9f\x98\x80");

  AccessRecord huge = EmbedCall();
  for (std::string* field :
       {&huge.request_id, &huge.traceparent, &huge.protocol, &huge.route,
        &huge.model, &huge.grpc_status, &huge.peer}) {
    *field = std::string(100000, '\x01');
  }
  const std::string line = AccessLog::FormatLine(huge, Json());
  EXPECT_LE(line.size(), kMaxAccessLineBytes);
  const Struct parsed_huge = Parse(line);
  const auto& g = parsed_huge.fields();
  EXPECT_EQ(g.at("model").string_value().size(), kMaxAccessFieldBytes);
  EXPECT_EQ(g.at("peer").string_value(),
            std::string(kMaxAccessFieldBytes, '\x01'));
}

TEST(AccessLogTest, TextLineIsKeyValuePairsOfVisibleAscii) {
  AccessLog::Options options;
  AccessRecord record = EmbedCall();
  record.model = "my model=\"x\"\n";
  const std::string line = AccessLog::FormatLine(record, options);
  EXPECT_EQ(line,
            "event=access request_id=req-1 "
            "traceparent=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-"
            "01 protocol=grpc method=/favor.v1.Favor/Embed "
            "model=my?model??x?? inputs=3 tokens=42 queue_ms=1.5 "
            "compute_ms=12.345 duration_ms=20.001 grpc_status=OK "
            "peer=ipv4:127.0.0.1:5555");
  AccessRecord huge = EmbedCall();
  huge.peer = std::string(100000, 'p');
  EXPECT_LE(AccessLog::FormatLine(huge, options).size(), kMaxAccessLineBytes);
}

TEST(AccessLogTest, FormatNames) {
  EXPECT_EQ(*ParseAccessLogFormat("text"), AccessLog::Format::kText);
  EXPECT_EQ(*ParseAccessLogFormat("json"), AccessLog::Format::kJson);
  EXPECT_EQ(ParseAccessLogFormat("JSON").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GrpcCodeName(0), "OK");
  EXPECT_EQ(GrpcCodeName(3), "INVALID_ARGUMENT");
  EXPECT_EQ(GrpcCodeName(14), "UNAVAILABLE");
}

}  // namespace
}  // namespace favor
