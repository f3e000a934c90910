// Protobuf's own log messages, routed into favor-server's log.
//
// Protobuf writes its messages to stderr by itself, one per event: a client
// that sends a string field that is not UTF-8 makes it log an ERROR for
// every such message, so any client could fill the log. Installed, the
// handler writes them through glog as key-value events like the server's
// own (`event=protobuf_log`), at most one per window, the next one counting
// those left out (`suppressed=N`). FATAL messages are passed on as they come.
#ifndef FAVOR_SERVER_APP_PROTOBUF_LOG_H_
#define FAVOR_SERVER_APP_PROTOBUF_LOG_H_

#include "absl/time/time.h"

namespace favor {

struct ProtobufLogOptions {
  // At most one line per window; the rest are counted.
  absl::Duration window = absl::Seconds(10);
};

// Replaces protobuf's log handler for the life of the process. Call once,
// from main, before any thread uses protobuf (protobuf's SetLogHandler is
// not thread-safe); later calls change the options.
void InstallProtobufLogHandler(const ProtobufLogOptions& options = {});

}  // namespace favor

#endif  // FAVOR_SERVER_APP_PROTOBUF_LOG_H_
