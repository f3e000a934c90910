#include "server/app/protobuf_log.h"

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/escaping.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "google/protobuf/stubs/logging.h"

namespace favor {
namespace {

struct State {
  absl::Mutex mu;
  absl::Duration window ABSL_GUARDED_BY(mu) = absl::Seconds(10);
  absl::Time last_logged ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  int64_t suppressed ABSL_GUARDED_BY(mu) = 0;
};

State& GetState() {
  static State* state = new State;  // never destroyed: threads may log late
  return *state;
}

const char* NameOf(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      return "INFO";
    case google::protobuf::LOGLEVEL_WARNING:
      return "WARNING";
    case google::protobuf::LOGLEVEL_ERROR:
      return "ERROR";
    case google::protobuf::LOGLEVEL_FATAL:
      return "FATAL";
  }
  return "UNKNOWN";
}

void Handle(google::protobuf::LogLevel level, const char* filename, int line,
            const std::string& message) {
  if (level == google::protobuf::LOGLEVEL_FATAL) {
    LOG(FATAL) << "event=protobuf_log level=FATAL source=" << filename << ":"
               << line << " message=\"" << absl::CEscape(message) << "\"";
  }
  State& state = GetState();
  int64_t suppressed = 0;
  {
    absl::MutexLock lock(&state.mu);
    const absl::Time now = absl::Now();
    if (now - state.last_logged < state.window) {
      ++state.suppressed;
      return;
    }
    state.last_logged = now;
    suppressed = state.suppressed;
    state.suppressed = 0;
  }
  const google::LogSeverity severity =
      level == google::protobuf::LOGLEVEL_ERROR     ? google::GLOG_ERROR
      : level == google::protobuf::LOGLEVEL_WARNING ? google::GLOG_WARNING
                                                    : google::GLOG_INFO;
  google::LogMessage(filename, line, severity).stream()
      << "event=protobuf_log level=" << NameOf(level)
      << " suppressed=" << suppressed << " message=\"" << absl::CEscape(message)
      << "\"";
}

}  // namespace

void InstallProtobufLogHandler(const ProtobufLogOptions& options) {
  {
    State& state = GetState();
    absl::MutexLock lock(&state.mu);
    state.window = options.window;
  }
  google::protobuf::SetLogHandler(&Handle);
}

}  // namespace favor
