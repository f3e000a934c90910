// Test support: the lines glog is given while a LogLines lives (a
// google::LogSink; what goes to stderr is unchanged).
#ifndef FAVOR_TESTS_APP_LOG_LINES_H_
#define FAVOR_TESTS_APP_LOG_LINES_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

namespace favor::testing {

class LogLines : public google::LogSink {
 public:
  LogLines() { google::AddLogSink(this); }
  ~LogLines() override { google::RemoveLogSink(this); }
  LogLines(const LogLines&) = delete;
  LogLines& operator=(const LogLines&) = delete;

  void send(google::LogSeverity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message,
            size_t length) override {
    absl::MutexLock lock(&mu_);
    lines_.emplace_back(message, length);
  }
  std::vector<std::string> lines() const {
    absl::MutexLock lock(&mu_);
    return lines_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::testing

#endif  // FAVOR_TESTS_APP_LOG_LINES_H_
