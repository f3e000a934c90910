// Fuzz target: the HTTP front's request handling (server/http/api_handler.h)
// without sockets. An input is raw HTTP/1.1 request bytes, parsed by Beast's
// parser as HttpServer's sessions parse them, then the handler's header
// check (routing, method, bearer token, X-Request-Timeout, X-Request-Id,
// traceparent) and, when it
// admits the request, Handle: the JSON to request translation (OpenAI's
// /v1/embeddings, /v1/favor/<Method>, /v1/models, /health). The service
// behind the handler's channel is a fake, in process, that answers every
// call with what the input says: a status code, a retry trailer, and
// response bytes (as a well-formed response message, which the handler must
// translate back to JSON).
//   <answer bytes> <retry-after-ms value> <HTTP request> <selector byte>
// The selector byte picks the status code (byte % 17) and whether the
// handler asks for a bearer token (byte % 34 < 17) or not.
// (the first two in FuzzedDataProvider's escaped form; make_seeds.py).
// Every answer must be a valid HTTP status with a JSON body and a valid
// X-Request-Id, and every access-log line (the fake also answers the usage
// trailers: the model from the answer bytes, the tokens from the retry
// value) one JSON object within kMaxAccessLineBytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "boost/beast/http/parser.hpp"
#include "favor/v1/favor.pb.h"
#include "fuzzer/FuzzedDataProvider.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "server/common/access_log.h"
#include "server/common/request_id.h"
#include "server/http/api_handler.h"
#include "server/service/call_log.h"

namespace {

namespace fh = favor::http;

void Require(bool condition) {
  if (!condition) std::abort();
}

// What the fake service answers next; set by the fuzzing thread before a
// request, read by gRPC's threads.
struct Answer {
  int code = 0;  // a gRPC status code; 0: OK with `bytes`
  std::string bytes;
  std::string retry_after;  // the retry-after-ms trailer; empty: none
};

class AnswerSlot {
 public:
  void Set(Answer answer) {
    absl::MutexLock lock(&mu_);
    answer_ = std::move(answer);
  }
  Answer Get() {
    absl::MutexLock lock(&mu_);
    return answer_;
  }

 private:
  absl::Mutex mu_;
  Answer answer_ ABSL_GUARDED_BY(mu_);
};

AnswerSlot* Slot() {
  static auto* const slot = new AnswerSlot();
  return slot;
}

// `bytes` as the favor.v1.Favor method's response would be: parsed as that
// message and written again (empty when they do not parse). The service
// only ever sends messages it serialized itself, and protobuf's binary to
// JSON converter (FavorJson::ResponseToJson) loops forever on some
// malformed packed fields, a case no client can reach.
std::string WellFormed(const std::string& path, const std::string& bytes) {
  const auto* method =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          "favor.v1.Favor." + path.substr(path.rfind('/') + 1));
  if (method == nullptr) return "";
  std::unique_ptr<google::protobuf::Message> message(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(method->output_type())
          ->New());
  if (!message->ParseFromString(bytes)) return "";
  return message->SerializeAsString();
}

// One unary call of any method: reads the request, answers from the slot.
class FakeCall final : public grpc::ServerGenericBidiReactor {
 public:
  explicit FakeCall(grpc::GenericCallbackServerContext* context)
      : context_(context) {
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    const Answer answer = Slot()->Get();
    // gRPC aborts on a metadata value that is not printable ASCII; the
    // service's own hints are decimal numbers.
    if (!answer.retry_after.empty() &&
        std::all_of(answer.retry_after.begin(), answer.retry_after.end(),
                    [](char c) { return c >= 0x20 && c < 0x7f; })) {
      context_->AddTrailingMetadata("retry-after-ms", answer.retry_after);
      // The usage trailers the service gives the front's access log
      // (call_log.h), as the input says.
      context_->AddTrailingMetadata(
          std::string(favor::service::kUsageTokensTrailer), answer.retry_after);
    }
    context_->AddTrailingMetadata(
        std::string(favor::service::kUsageModelTrailer),
        answer.bytes.substr(0, 512));
    if (answer.code != 0) {
      return Finish(grpc::Status(static_cast<grpc::StatusCode>(answer.code),
                                 answer.bytes));
    }
    grpc::Slice slice(WellFormed(context_->method(), answer.bytes));
    response_ = grpc::ByteBuffer(&slice, 1);
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  grpc::GenericCallbackServerContext* context_;
  grpc::ByteBuffer request_, response_;
};

class FakeService final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    return new FakeCall(context);
  }
};

// The fake service, in process; started once, never stopped (gRPC's
// threads outlive every input).
grpc::Server* FakeServer() {
  static grpc::Server* const server = [] {
    static FakeService service;
    grpc::ServerBuilder builder;
    builder.RegisterCallbackGenericService(&service);
    return builder.BuildAndStart().release();
  }();
  Require(server != nullptr);
  return server;
}

// Every access-log line is one JSON object within the bound.
favor::AccessLog* CheckedAccessLog() {
  static auto* const log = new favor::AccessLog(
      {favor::AccessLog::Format::kJson, absl::Milliseconds(1)},
      [](bool, absl::string_view line) {
        Require(line.size() <= favor::kMaxAccessLineBytes);
        const auto json = nlohmann::json::parse(line, nullptr, false);
        Require(json.is_object() && json.contains("request_id"));
      });
  return log;
}

// Two handlers reaching it: one that asks for a bearer token, one open
// (favor-server's default).
fh::ApiHandler* Handler(bool open) {
  auto make = [](std::vector<std::string> tokens) {
    fh::ApiHandler::Options options;
    options.access_log = CheckedAccessLog();
    options.bearer_tokens = std::move(tokens);
    options.default_timeout = absl::Seconds(5);
    return new fh::ApiHandler(
        options, FakeServer()->InProcessChannel(grpc::ChannelArguments()),
        [] { return true; });
  };
  static fh::ApiHandler* const with_key = make({"fuzz-key"});
  static fh::ApiHandler* const without_key = make({});
  return open ? without_key : with_key;
}

void CheckResponse(const fh::Response& response) {
  Require(response.result_int() >= 100 && response.result_int() <= 599);
  Require(nlohmann::json::accept(response.body()));
  const auto id = response.find("X-Request-Id");
  Require(id != response.end());
  Require(favor::CheckRequestId(fh::ViewOf(id->value())).ok());
}

}  // namespace

// Protobuf logs a line for each string that is not UTF-8: silenced.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  Answer answer;
  const int selector = provider.ConsumeIntegralInRange(0, 33);
  answer.code = selector % 17;
  answer.bytes = provider.ConsumeRandomLengthString(1024);
  answer.retry_after = provider.ConsumeRandomLengthString(16);
  const std::string raw = provider.ConsumeRemainingBytesAsString();

  boost::beast::http::request_parser<fh::GrowingStringBody> parser;
  parser.eager(true);
  parser.body_limit(1 << 20);
  boost::beast::error_code error;
  size_t parsed = 0;
  while (!parser.is_done() && parsed < raw.size()) {
    const size_t used = parser.put(
        boost::asio::buffer(raw.data() + parsed, raw.size() - parsed), error);
    if (error || used == 0) return 0;
    parsed += used;
  }
  if (!parser.is_done()) return 0;
  const fh::Request& request = parser.get();

  fh::ApiHandler* handler = Handler(/*open=*/selector >= 17);
  fh::Handler::Admission admission = handler->AcceptFrom(request, "fuzz");
  if (const auto* refusal = std::get_if<fh::Response>(&admission)) {
    CheckResponse(*refusal);
    return 0;
  }
  Slot()->Set(std::move(answer));
  absl::Notification answered;
  std::get<std::unique_ptr<fh::Exchange>>(admission)->Handle(
      request,
      [&answered](fh::Response response) {
        CheckResponse(response);
        answered.Notify();
      },
      std::make_shared<fh::ClientGone>());
  // An answer that never comes would hang a connection: a bug.
  Require(answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  return 0;
}
