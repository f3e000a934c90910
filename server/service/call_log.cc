#include "server/service/call_log.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/service/bearer_auth.h"

namespace favor::service {
namespace {

absl::string_view ViewOf(grpc::string_ref ref) {
  return absl::string_view(ref.data(), ref.size());
}

std::vector<absl::string_view> ValuesOf(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    absl::string_view key) {
  std::vector<absl::string_view> values;
  const auto [begin, end] =
      metadata.equal_range(grpc::string_ref(key.data(), key.size()));
  for (auto it = begin; it != end; ++it) values.push_back(ViewOf(it->second));
  return values;
}

std::optional<int64_t> NumberOf(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    absl::string_view key) {
  const std::vector<absl::string_view> values = ValuesOf(metadata, key);
  int64_t number = 0;
  if (values.size() != 1 || !absl::SimpleAtoi(values[0], &number)) {
    return std::nullopt;
  }
  return number;
}

void AddUsageTrailers(const AccessRecord& record,
                      grpc::CallbackServerContext* context) {
  const auto add = [context](absl::string_view key, std::string value) {
    context->AddTrailingMetadata(std::string(key), std::move(value));
  };
  if (!record.model.empty()) add(kUsageModelTrailer, record.model);
  if (record.inputs >= 0) add(kUsageInputsTrailer, absl::StrCat(record.inputs));
  if (record.tokens >= 0) add(kUsageTokensTrailer, absl::StrCat(record.tokens));
  if (record.queue_time.has_value()) {
    add(kUsageQueueTrailer,
        absl::StrCat(absl::ToInt64Microseconds(*record.queue_time)));
  }
  if (record.compute_time.has_value()) {
    add(kUsageComputeTrailer,
        absl::StrCat(absl::ToInt64Microseconds(*record.compute_time)));
  }
}

}  // namespace

CallLogging StartCallLogging(grpc::CallbackServerContext* context,
                             AccessLog* log, absl::string_view in_process_key) {
  CallLogging logging;
  logging.log = log;
  logging.in_process = IsInProcessCall(*context, in_process_key);
  const auto& metadata = context->client_metadata();
  logging.ids = ReadCallIds(ValuesOf(metadata, kRequestIdHeader),
                            ValuesOf(metadata, kTraceparentHeader));
  logging.peer = context->peer();
  context->AddInitialMetadata(std::string(kRequestIdHeader),
                              logging.ids.request_id);
  return logging;
}

void EndCallLogging(const CallLogging& logging, absl::string_view method,
                    const grpc::Status& status, absl::Duration duration,
                    AccessRecord record, grpc::CallbackServerContext* context) {
  if (logging.in_process) {
    AddUsageTrailers(record, context);
    return;
  }
  if (logging.log == nullptr) return;
  record.request_id = logging.ids.request_id;
  record.traceparent = logging.ids.traceparent;
  record.protocol = "grpc";
  record.route = absl::StrCat("/favor.v1.Favor/", method);
  record.grpc_status = GrpcCodeName(status.error_code());
  record.duration = duration;
  record.time = absl::Now();
  record.peer = logging.peer;
  logging.log->Write(record);
}

void ReadUsageTrailers(
    const std::multimap<grpc::string_ref, grpc::string_ref>& trailers,
    AccessRecord* record) {
  const std::vector<absl::string_view> model =
      ValuesOf(trailers, kUsageModelTrailer);
  if (model.size() == 1) record->model = std::string(model[0]);
  record->inputs = NumberOf(trailers, kUsageInputsTrailer).value_or(-1);
  record->tokens = NumberOf(trailers, kUsageTokensTrailer).value_or(-1);
  if (auto queue = NumberOf(trailers, kUsageQueueTrailer)) {
    record->queue_time = absl::Microseconds(*queue);
  }
  if (auto compute = NumberOf(trailers, kUsageComputeTrailer)) {
    record->compute_time = absl::Microseconds(*compute);
  }
}

}  // namespace favor::service
