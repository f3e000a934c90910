// InstallProtobufLogHandler: protobuf's complaint about a string field that
// is not UTF-8 (what a client can make it log at will) reaches glog as a
// key-value event, at most once a window, the next line counting the rest.
#include "server/app/protobuf_log.h"

#include <string>
#include <vector>

#include "favor/v1/favor.pb.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/app/log_lines.h"

namespace favor {
namespace {

using ::testing::HasSubstr;

// A serialized EmbedInput whose text is the byte 0xff.
std::string InvalidUtf8Input() {
  v1::EmbedInput input;
  input.set_text("x");
  std::string bytes = input.SerializeAsString();
  bytes.back() = '\xff';
  return bytes;
}

TEST(ProtobufLogTest, ClientTriggeredErrorsAreEventsAtMostOnceAWindow) {
  testing::LogLines sink;
  ProtobufLogOptions options;
  options.window = absl::Hours(1);
  InstallProtobufLogHandler(options);
  const std::string bytes = InvalidUtf8Input();
  for (int i = 0; i < 100; ++i) {
    v1::EmbedInput parsed;
    EXPECT_FALSE(parsed.ParseFromString(bytes));
  }
  std::vector<std::string> lines = sink.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("event=protobuf_log level=ERROR "
                                  "suppressed=0 message=\""));
  EXPECT_THAT(lines[0], HasSubstr("favor.v1.EmbedInput.text"));
  // The next line carries the count of those left out (a window of zero
  // makes it the next message).
  options.window = absl::ZeroDuration();
  InstallProtobufLogHandler(options);
  v1::EmbedInput parsed;
  EXPECT_FALSE(parsed.ParseFromString(bytes));
  lines = sink.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[1], HasSubstr("suppressed=99"));
}

}  // namespace
}  // namespace favor
