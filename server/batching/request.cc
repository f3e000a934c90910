#include "server/batching/request.h"

#include <utility>

#include "glog/logging.h"

namespace favor::batching {

std::string_view PriorityName(Priority priority) {
  switch (priority) {
    case Priority::kHigh:
      return "high";
    case Priority::kNormal:
      return "normal";
  }
  return "unknown";
}

Request::Request(DoneCallback done) : done_(std::move(done)) {}

Request::~Request() {
  if (!completed_) {
    LOG(ERROR) << "request " << id << " destroyed without an answer";
    Complete(absl::InternalError("request dropped without an answer"));
  }
}

void Request::Complete(absl::Status status) {
  if (completed_) {
    LOG(DFATAL) << "request " << id << " completed twice; second status "
                << status << " ignored";
    return;
  }
  completed_ = true;
  if (done_) std::move(done_)(std::move(status));
}

}  // namespace favor::batching
