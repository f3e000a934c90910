#include "server/service/favor_service.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/batching/job.h"
#include "server/common/status_macros.h"
#include "server/metrics/metric_names.h"
#include "server/service/bearer_auth.h"
#include "server/service/call_log.h"
#include "server/service/model_info.h"
#include "server/service/server_timing.h"
#include "server/service/tokenize_texts.h"
#include "server/service/unary_call.h"

namespace favor::service {
namespace {

// What a call, stream or stream message gets once the service drains.
absl::Status ShuttingDownError() {
  return absl::UnavailableError(
      "server is shutting down; retry on another replica");
}

// The batcher of `entry`, sharing its lease: a call that watches it weakly
// cannot keep a retired revision alive.
std::shared_ptr<batching::Batcher> BatcherOf(
    const ModelRegistry::Lease& entry) {
  return std::shared_ptr<batching::Batcher>(entry,
                                            entry->batcher->batcher().get());
}

batching::Priority PriorityOf(v1::Priority priority) {
  return priority == v1::PRIORITY_HIGH ? batching::Priority::kHigh
                                       : batching::Priority::kNormal;
}

void ReportTiming(const v1::ServerTiming& timing, AccessRecord* record) {
  record->queue_time = absl::Microseconds(timing.queue_time_micros());
  record->compute_time = absl::Microseconds(timing.compute_time_micros());
}

}  // namespace

batching::Batcher::Options FavorService::DefaultAttendBatching() {
  batching::Batcher::Options options;
  options.model_name = "(attend)";
  options.max_batch_requests = 1;
  options.max_batch_tokens = 1;
  options.max_queue_delay = absl::ZeroDuration();
  options.max_queue_requests = 64;
  options.max_queue_tokens = int64_t{1} << 26;
  options.run_oversize_alone = true;
  return options;
}

FavorService::FavorService(const Options& options, metrics::Metrics* metrics,
                           batching::Clock* clock)
    : options_(options),
      metrics_(metrics != nullptr ? metrics : metrics::Metrics::Noop()),
      clock_(clock != nullptr ? clock : batching::RealClock::Get()),
      in_process_key_(NewInProcessKey()) {}

absl::Status FavorService::StartAttendBatcher() {
  ASSIGN_OR_RETURN(attend_runner_,
                   AttendRunner::Create(clock_, options_.attend_device));
  ASSIGN_OR_RETURN(attend_batcher_,
                   batching::JobBatcher<AttendWork>::Create(
                       options_.attend_batching, attend_runner_.get(), clock_));
  return absl::OkStatus();
}

absl::Status FavorService::StartTokenizerPool() {
  TaskPool::Options pool;
  pool.name = "tokenizer";
  pool.num_threads = options_.tokenizer_threads;
  pool.max_queued_tasks = options_.max_queued_tokenizations;
  ASSIGN_OR_RETURN(tokenizer_pool_, TaskPool::Create(pool));
  return absl::OkStatus();
}

FavorService::~FavorService() { Shutdown(absl::ZeroDuration()); }

void FavorService::StartDraining() { open_calls_.StopAccepting(); }

void FavorService::Shutdown(absl::Duration drain_timeout) {
  StartDraining();
  const absl::Time deadline = clock_->Now() + drain_timeout;
  // Tokenising calls finish first: they enqueue into the batchers.
  if (tokenizer_pool_ != nullptr) tokenizer_pool_->Shutdown();
  // Retired revisions still finishing their calls drain too.
  for (batching::Batcher* batcher : registry_.StopFreeing()) {
    batcher->Shutdown(std::max(deadline - clock_->Now(), absl::ZeroDuration()));
  }
  if (attend_batcher_ != nullptr) {
    attend_batcher_->batcher()->Shutdown(
        std::max(deadline - clock_->Now(), absl::ZeroDuration()));
  }
  // Every message a stream has read is answered by now: streams that the
  // client keeps open would otherwise only end when gRPC cancels them.
  open_calls_.StopStreams();
}

bool FavorService::WaitForOpenCalls(absl::Duration timeout) {
  return open_calls_.WaitUntilNoneOpen(timeout);
}

absl::StatusOr<FavorService::Lease> FavorService::FindModel(
    absl::string_view name) const {
  return registry_.Find(name.empty() ? default_model_ : name);
}

absl::Status FavorService::CheckServing() const {
  return draining() ? ShuttingDownError() : absl::OkStatus();
}

template <typename Start>
grpc::ServerUnaryReactor* FavorService::StartUnary(
    grpc::CallbackServerContext* context, absl::string_view method,
    Start start) {
  auto* call = new UnaryCall(context, metrics_, method, &open_calls_);
  call->set_logging(
      StartCallLogging(context, options_.access_log, in_process_key_));
  absl::Status status =
      AuthenticateCall(*context, options_.bearer_tokens, in_process_key_);
  if (status.ok()) status = call->logging().ids.status;
  if (status.ok() && !call->accepted()) status = ShuttingDownError();
  if (status.ok()) status = start(call);
  if (!status.ok()) call->Answer(status);
  return call;
}

grpc::ServerUnaryReactor* FavorService::Embed(
    grpc::CallbackServerContext* context, const v1::EmbedRequest* request,
    v1::EmbedResponse* response) {
  return StartUnary(context, metrics::kMethodEmbed, [&](UnaryCall* call) {
    call->ReportUsage([request, response](AccessRecord* record) {
      record->inputs = request->inputs_size();
      record->tokens = response->num_tokens();
      ReportTiming(response->timing(), record);
    });
    auto on_model = [call](absl::string_view model,
                           std::weak_ptr<batching::Batcher> batcher,
                           int64_t /*answer_bytes_bound*/) {
      call->set_model(model);
      call->WatchBatcher(std::move(batcher));
    };
    return StartEmbed(
        *request, call->deadline(), call->cancellation(), on_model,
        [call](absl::Status status) { call->Answer(status); }, response);
  });
}

absl::Status FavorService::StartEmbed(
    const v1::EmbedRequest& request, absl::Time deadline,
    std::shared_ptr<batching::CancellationFlag> cancellation, OnModel on_model,
    absl::AnyInvocable<void(absl::Status)> done, v1::EmbedResponse* response) {
  PreparedEmbed prepared;
  ASSIGN_OR_RETURN(prepared.entry, FindModel(request.model()));
  const model::ModelDescription& model = prepared.entry->model->description();
  ASSIGN_OR_RETURN(prepared.options,
                   ResolveEmbedOptions(request, model, prepared.entry->limits));
  RETURN_IF_ERROR(CheckEmbedRequest(request, model, prepared.options,
                                    prepared.entry->limits));
  prepared.priority = PriorityOf(request.priority());
  prepared.answer_bytes_bound = AnswerBytesBound(
      request, model, prepared.options, prepared.entry->limits);
  if (!HasText(request)) {
    RETURN_IF_ERROR(PrepareEmbed(request, &prepared, response));
    on_model(model.name, BatcherOf(prepared.entry),
             prepared.answer_bytes_bound);
    EnqueueEmbed(std::move(prepared), deadline, std::move(cancellation),
                 std::move(done), response, metrics_);
    return absl::OkStatus();
  }
  on_model(model.name, BatcherOf(prepared.entry), prepared.answer_bytes_bound);
  // The task owns a copy: a stream's request is its read buffer, reused as
  // soon as this returns.
  auto task = [this, owned = std::make_shared<v1::EmbedRequest>(request),
               prepared = std::move(prepared), deadline, cancellation,
               done = std::move(done), response]() mutable {
    RunTextEmbed(*owned, std::move(prepared), deadline, std::move(cancellation),
                 std::move(done), response);
  };
  return tokenizer_pool_->Schedule(std::move(task));
}

absl::Status FavorService::PrepareEmbed(const v1::EmbedRequest& request,
                                        PreparedEmbed* prepared,
                                        v1::EmbedResponse* response) {
  const model::ModelDescription& model = prepared->entry->model->description();
  ASSIGN_OR_RETURN(
      prepared->inputs,
      PrepareEmbedInputs(request, prepared->options, prepared->entry->limits,
                         model.tokenizer.get()));
  RETURN_IF_ERROR(CheckAnswerFitsAMessage(request, *prepared));
  response->set_model(model.name);
  response->set_model_version(model.config.version);
  response->set_model_revision(prepared->entry->revision);
  int64_t num_tokens = 0;
  for (const PreparedInput& input : prepared->inputs) {
    v1::Embedding* embedding = response->add_embeddings();
    embedding->set_num_tokens(static_cast<int64_t>(input.token_ids.size()));
    embedding->set_num_truncated_tokens(input.num_truncated_tokens);
    embedding->set_num_chunks(input.num_windows());
    num_tokens += embedding->num_tokens();
  }
  response->set_num_tokens(num_tokens);
  return absl::OkStatus();
}

absl::Status FavorService::CheckAnswerFitsAMessage(
    const v1::EmbedRequest& request, const PreparedEmbed& prepared) const {
  // The bound from before tokenising settles it unless it is over the limit:
  // then the tokens the inputs really have do (a text's bound from its bytes
  // would refuse valid calls).
  if (prepared.answer_bytes_bound <= options_.max_answer_message_bytes) {
    return absl::OkStatus();
  }
  std::vector<int64_t> tokens_per_input;
  tokens_per_input.reserve(prepared.inputs.size());
  for (const PreparedInput& input : prepared.inputs) {
    tokens_per_input.push_back(static_cast<int64_t>(input.token_ids.size()));
  }
  const int64_t answer_bytes = AnswerBytesBound(
      request, prepared.entry->model->description(), prepared.options,
      prepared.entry->limits, tokens_per_input);
  if (answer_bytes <= options_.max_answer_message_bytes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "the answer would take up to ", answer_bytes, " bytes, over the ",
      options_.max_answer_message_bytes,
      " a message may have (--max_message_bytes): ask for fewer tokens a "
      "call, token embeddings in bfloat16 or float16, or spans instead of "
      "token embeddings; as asked, it can never run here"));
}

void FavorService::RunTextEmbed(
    const v1::EmbedRequest& request, PreparedEmbed prepared,
    absl::Time deadline,
    std::shared_ptr<batching::CancellationFlag> cancellation,
    absl::AnyInvocable<void(absl::Status)> done, v1::EmbedResponse* response) {
  if (cancellation->cancelled()) {
    done(absl::CancelledError("the call was cancelled before tokenisation"));
    return;
  }
  const absl::Time start = absl::Now();
  absl::Status status = PrepareEmbed(request, &prepared, response);
  metrics_->RecordTokenization(prepared.entry->model->name(),
                               absl::Now() - start);
  if (!status.ok()) {
    done(status);
    return;
  }
  EnqueueEmbed(std::move(prepared), deadline, std::move(cancellation),
               std::move(done), response, metrics_);
}

grpc::ServerUnaryReactor* FavorService::Attend(
    grpc::CallbackServerContext* context, const v1::AttendRequest* request,
    v1::AttendResponse* response) {
  return StartUnary(context, metrics::kMethodAttend, [&](UnaryCall* call) {
    call->ReportUsage([response](AccessRecord* record) {
      ReportTiming(response->timing(), record);
    });
    return StartAttend(call, *request, response);
  });
}

absl::Status FavorService::StartAttend(UnaryCall* call,
                                       const v1::AttendRequest& request,
                                       v1::AttendResponse* response) {
  auto work = std::make_shared<AttendWork>();
  ASSIGN_OR_RETURN(work->plan,
                   ValidateAttendRequest(request, options_.attend_limits));
  work->request = &request;
  work->response = response;
  auto job = std::make_unique<batching::Job<AttendWork>>(
      work, [call, work](absl::Status status) {
        if (status.ok()) {
          MergeServerTiming(work->queue_time, work->compute_time,
                            work->response->mutable_timing());
        }
        call->Answer(status);
      });
  job->num_tokens = std::max<int64_t>(1, work->plan.cost_tokens);
  job->priority = PriorityOf(request.priority());
  job->deadline = call->deadline();
  job->cancellation = call->cancellation();
  call->WatchBatcher(attend_batcher_->batcher());
  // Whatever Enqueue returns, the done callback has answered or will answer.
  attend_batcher_->Enqueue(std::move(job)).IgnoreError();
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* FavorService::ListModels(
    grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
    v1::ListModelsResponse* response) {
  return StartUnary(context, metrics::kMethodListModels, [&](UnaryCall* call) {
    const std::map<std::string, absl::Status> failures = registry_.Failures();
    for (const Lease& entry : registry_.Serving()) {
      *response->add_models() = InfoOf(*entry);
    }
    for (const auto& [name, failure] : failures) {
      if (registry_.Contains(name)) continue;
      v1::ModelLoadFailure* failed = response->add_failed_models();
      failed->set_name(name);
      failed->set_error(std::string(failure.message()));
    }
    response->set_default_model(default_model_);
    call->Answer(absl::OkStatus());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* FavorService::GetModel(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request,
    v1::GetModelResponse* response) {
  return StartUnary(context, metrics::kMethodGetModel, [&](UnaryCall* call) {
    ASSIGN_OR_RETURN(const Lease entry, FindModel(request->model()));
    call->set_model(entry->name);
    *response->mutable_model() = InfoOf(*entry);
    call->Answer(absl::OkStatus());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* FavorService::Tokenize(
    grpc::CallbackServerContext* context, const v1::TokenizeRequest* request,
    v1::TokenizeResponse* response) {
  return StartUnary(context, metrics::kMethodTokenize, [&](UnaryCall* call) {
    call->ReportUsage([request, response](AccessRecord* record) {
      record->inputs = request->texts_size();
      int64_t tokens = 0;
      for (const v1::TokenizedText& text : response->texts()) {
        tokens += text.ids_size();
      }
      record->tokens = tokens;
    });
    return StartTokenize(call, *request, response);
  });
}

absl::Status FavorService::StartTokenize(UnaryCall* call,
                                         const v1::TokenizeRequest& request,
                                         v1::TokenizeResponse* response) {
  ASSIGN_OR_RETURN(Lease entry, FindModel(request.model()));
  const model::ModelDescription& model = entry->model->description();
  call->set_model(model.name);
  RETURN_IF_ERROR(CheckTokenizeRequest(request, model, entry->limits));
  response->set_model(model.name);
  // The request and response live until the call is answered; the task
  // holds the revision (and so `model`) until then.
  return tokenizer_pool_->Schedule([this, call, &request, &model, response,
                                    entry = std::move(entry)] {
    if (call->cancellation()->cancelled()) {
      call->Answer(absl::CancelledError("the call was cancelled"));
      return;
    }
    const absl::Time start = absl::Now();
    const absl::Status status = TokenizeTexts(
        request, *model.tokenizer, entry->limits.max_tokens_per_call, response);
    metrics_->RecordTokenization(model.name, absl::Now() - start);
    call->Answer(status);
  });
}

grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
FavorService::EmbedStream(grpc::CallbackServerContext* context) {
  CallLogging logging =
      StartCallLogging(context, options_.access_log, in_process_key_);
  absl::Status status =
      AuthenticateCall(*context, options_.bearer_tokens, in_process_key_);
  if (status.ok()) status = logging.ids.status;
  const auto denied = [&](const absl::Status& refusal) {
    EndCallLogging(logging, metrics::kMethodEmbedStream,
                   grpc::Status(static_cast<grpc::StatusCode>(refusal.code()),
                                std::string(refusal.message())),
                   absl::ZeroDuration(), {}, context);
    return DeniedEmbedStream(refusal);
  };
  if (!status.ok()) return denied(status);
  StreamLimits limits;
  limits.max_messages_in_flight = options_.max_stream_messages_in_flight;
  limits.max_answer_bytes_in_flight =
      options_.max_stream_answer_bytes_in_flight;
  EmbedStreamCall* call = EmbedStreamCall::Start(context, this, metrics_,
                                                 limits, &open_calls_, logging);
  if (call == nullptr) return denied(ShuttingDownError());
  return call;
}

}  // namespace favor::service
