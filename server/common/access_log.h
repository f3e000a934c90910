// The access log (docs/deployment.md, "Access logs"): one line per HTTP
// request and per gRPC call (a stream: one line when it ends), written when
// the call is answered. Text (the default) goes through glog, with its
// prefix, as `event=access key=value ...`; JSON (--log_format=json) goes
// straight to stderr, each line exactly one JSON object with nothing before
// it, written by nlohmann-json (never escaped by hand).
//
// A line says who asked, what for and how it went, never what was asked:
// no request or answer contents, only counts, names, times and codes. Every
// string field is cut to kMaxAccessFieldBytes (JSON: bytes that are not
// UTF-8 become U+FFFD; text: every byte but visible ASCII, and '"', '\\'
// and '=', becomes '?'), so a line is at most kMaxAccessLineBytes whatever the
// call carried: ten string fields of 256 bytes, each escaped to at most six
// bytes a byte, and the numbers.
//
// A call slower than Options::slow_call_threshold (from when it came in to
// when it was answered) is written at warning level: glog's W, or
// "level":"warning" (else "info").
#ifndef FAVOR_SERVER_COMMON_ACCESS_LOG_H_
#define FAVOR_SERVER_COMMON_ACCESS_LOG_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace favor {

inline constexpr size_t kMaxAccessFieldBytes = 256;
inline constexpr size_t kMaxAccessLineBytes = 16384;

// One call, as its line tells it. Fields left at their defaults are left out
// of the line.
struct AccessRecord {
  absl::Time time = absl::Now();  // when the call was answered
  std::string request_id;
  std::string traceparent;  // W3C trace context; empty: none
  std::string protocol;     // "http" or "grpc"
  // HTTP: the route, as the metrics' `route` label ("/v1/embeddings");
  // gRPC: the full method ("/favor.v1.Favor/Embed").
  std::string route;
  std::string model;    // the model that served it; empty: none or unknown
  int64_t inputs = -1;  // inputs of an Embed call, texts of a Tokenize
  int64_t tokens = -1;  // tokens read (the answer's num_tokens / usage)
  // The service's ServerTiming: in the queue, and computing (a unary call:
  // its slowest input's; a stream: the sum over its messages).
  std::optional<absl::Duration> queue_time;
  std::optional<absl::Duration> compute_time;
  absl::Duration duration;  // in to answered
  std::string grpc_status;  // the code's name ("OK"); empty: none
  int http_status = 0;      // 0: a gRPC call
  std::string peer;         // the client's address
};

class AccessLog {
 public:
  enum class Format { kText, kJson };

  struct Options {
    Format format = Format::kText;
    // Calls that take longer are logged at warning level; InfiniteDuration:
    // none.
    absl::Duration slow_call_threshold = absl::InfiniteDuration();
  };

  // Receives each line (without a newline) and whether it is a warning.
  using Sink = absl::AnyInvocable<void(bool warning, absl::string_view line)>;

  // `sink` null: text through glog (INFO or WARNING), JSON to stderr with
  // one write a line.
  explicit AccessLog(const Options& options, Sink sink = nullptr);

  // Formats `record` and hands it to the sink; thread-safe.
  void Write(const AccessRecord& record);

  // The line of `record` in `options.format`, at most kMaxAccessLineBytes.
  static std::string FormatLine(const AccessRecord& record,
                                const Options& options);
  static bool IsSlow(const AccessRecord& record, const Options& options);

 private:
  const Options options_;
  Sink sink_;
};

// "text" or "json"; INVALID_ARGUMENT otherwise (--log_format).
absl::StatusOr<AccessLog::Format> ParseAccessLogFormat(absl::string_view name);

// The name of a gRPC status code ("OK", "INVALID_ARGUMENT"), from its number.
std::string GrpcCodeName(int code);

}  // namespace favor

#endif  // FAVOR_SERVER_COMMON_ACCESS_LOG_H_
