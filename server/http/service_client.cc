#include "server/http/service_client.h"

#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/common/request_id.h"
#include "server/service/bearer_auth.h"
#include "server/service/call_log.h"
#include "server/service/status_mapping.h"

namespace favor::http {
namespace {

// What one call owns until its completion callback has run.
struct PendingCall {
  grpc::ClientContext context;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  absl::AnyInvocable<void(ServiceClient::Answer)> done;
  std::shared_ptr<AccessRecord> usage;
};

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (!buffer.Dump(&slices).ok()) return bytes;
  bytes.reserve(buffer.Length());
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

std::optional<int64_t> RetryHint(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(std::string(service::kRetryAfterMsTrailer));
  int64_t millis = 0;
  if (it == trailers.end() ||
      !absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                        &millis)) {
    return std::nullopt;
  }
  return millis;
}

}  // namespace

ServiceClient::ServiceClient(std::shared_ptr<grpc::Channel> channel,
                             std::string in_process_key)
    : channel_(std::move(channel)),
      stub_(channel_),
      in_process_key_(std::move(in_process_key)) {}

void ServiceClient::Call(absl::string_view method, std::string request,
                         const CallOptions& options,
                         absl::AnyInvocable<void(Answer)> done) {
  auto call = std::make_shared<PendingCall>();
  call->done = std::move(done);
  if (options.deadline != absl::InfiniteFuture()) {
    call->context.set_deadline(absl::ToChronoTime(options.deadline));
  }
  if (!in_process_key_.empty()) {
    call->context.AddMetadata(std::string(service::kInProcessKeyMetadata),
                              in_process_key_);
  }
  if (!options.request_id.empty()) {
    call->context.AddMetadata(std::string(kRequestIdHeader),
                              options.request_id);
  }
  if (!options.traceparent.empty()) {
    call->context.AddMetadata(std::string(kTraceparentHeader),
                              options.traceparent);
  }
  call->usage = options.usage;
  grpc::Slice slice(std::move(request));
  call->request = grpc::ByteBuffer(&slice, 1);
  if (options.client_gone != nullptr) {
    // Holds the call (not the other way round): the session drops its
    // ClientGone once the answer is written.
    options.client_gone->Listen([call] { call->context.TryCancel(); });
  }
  stub_.UnaryCall(&call->context, absl::StrCat("/favor.v1.Favor/", method),
                  grpc::StubOptions(), &call->request, &call->response,
                  [call](grpc::Status status) {
                    Answer answer;
                    answer.status = absl::Status(
                        static_cast<absl::StatusCode>(status.error_code()),
                        status.error_message());
                    if (call->usage != nullptr) {
                      service::ReadUsageTrailers(
                          call->context.GetServerTrailingMetadata(),
                          call->usage.get());
                      call->usage->grpc_status =
                          GrpcCodeName(status.error_code());
                    }
                    if (status.ok()) {
                      answer.response = Flatten(call->response);
                    } else {
                      answer.retry_after_millis = RetryHint(call->context);
                    }
                    call->done(std::move(answer));
                  });
}

}  // namespace favor::http
