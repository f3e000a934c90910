#include "server/common/access_log.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"
#include "nlohmann/json.hpp"

namespace favor {
namespace {

absl::string_view Cut(absl::string_view value) {
  return value.substr(0, kMaxAccessFieldBytes);
}

// Milliseconds, rounded to the microsecond.
double Millis(absl::Duration duration) {
  return std::round(absl::ToDoubleMicroseconds(duration)) / 1e3;
}

std::string TimeOf(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
}

// The fields of a line, in order: (key, string or number).
using Fields = nlohmann::ordered_json;

Fields FieldsOf(const AccessRecord& record, bool warning) {
  Fields fields;
  fields["time"] = TimeOf(record.time);
  fields["level"] = warning ? "warning" : "info";
  fields["request_id"] = Cut(record.request_id);
  if (!record.traceparent.empty()) {
    fields["traceparent"] = Cut(record.traceparent);
  }
  fields["protocol"] = Cut(record.protocol);
  fields[record.http_status != 0 ? "route" : "method"] = Cut(record.route);
  if (!record.model.empty()) fields["model"] = Cut(record.model);
  if (record.inputs >= 0) fields["inputs"] = record.inputs;
  if (record.tokens >= 0) fields["tokens"] = record.tokens;
  if (record.queue_time.has_value()) {
    fields["queue_ms"] = Millis(*record.queue_time);
  }
  if (record.compute_time.has_value()) {
    fields["compute_ms"] = Millis(*record.compute_time);
  }
  fields["duration_ms"] = Millis(record.duration);
  if (record.http_status != 0) fields["http_status"] = record.http_status;
  if (!record.grpc_status.empty()) {
    fields["grpc_status"] = Cut(record.grpc_status);
  }
  if (!record.peer.empty()) fields["peer"] = Cut(record.peer);
  return fields;
}

// A text value: visible ASCII but for the quote, the backslash and '=',
// which would make the key=value line ambiguous.
std::string TextValue(absl::string_view value) {
  std::string text(Cut(value));
  for (char& c : text) {
    const bool plain =
        c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '=';
    if (!plain) c = '?';
  }
  return text.empty() ? "-" : text;
}

std::string TextLine(const Fields& fields) {
  std::string line = "event=access";
  for (const auto& [key, value] : fields.items()) {
    if (key == "time" || key == "level") continue;  // glog's prefix says them
    absl::StrAppend(
        &line, " ", key, "=",
        value.is_string() ? TextValue(value.get<std::string>()) : value.dump());
  }
  return line;
}

void DefaultSink(AccessLog::Format format, bool warning,
                 absl::string_view line) {
  if (format == AccessLog::Format::kText) {
    if (warning) {
      LOG(WARNING) << line;
    } else {
      LOG(INFO) << line;
    }
    return;
  }
  // One fwrite: stdio's lock keeps it whole beside glog's own writes.
  const std::string whole = absl::StrCat(line, "\n");
  std::fwrite(whole.data(), 1, whole.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

AccessLog::AccessLog(const Options& options, Sink sink)
    : options_(options), sink_(std::move(sink)) {
  if (sink_ == nullptr) {
    sink_ = [format = options.format](bool warning, absl::string_view line) {
      DefaultSink(format, warning, line);
    };
  }
}

bool AccessLog::IsSlow(const AccessRecord& record, const Options& options) {
  return record.duration > options.slow_call_threshold;
}

std::string AccessLog::FormatLine(const AccessRecord& record,
                                  const Options& options) {
  const Fields fields = FieldsOf(record, IsSlow(record, options));
  if (options.format == Format::kText) return TextLine(fields);
  return fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AccessLog::Write(const AccessRecord& record) {
  sink_(IsSlow(record, options_), FormatLine(record, options_));
}

absl::StatusOr<AccessLog::Format> ParseAccessLogFormat(absl::string_view name) {
  if (name == "text") return AccessLog::Format::kText;
  if (name == "json") return AccessLog::Format::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--log_format is text or json, not '", name, "'"));
}

std::string GrpcCodeName(int code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace favor
