#include "server/service/favor_service.h"

#include <algorithm>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/metrics/metric_names.h"
#include "server/service/model_info.h"
#include "server/service/tensor_codec.h"
#include "server/service/unary_call.h"

namespace favor::service {
namespace {

batching::Priority PriorityOf(v1::Priority priority) {
  return priority == v1::PRIORITY_HIGH ? batching::Priority::kHigh
                                       : batching::Priority::kNormal;
}

void SetTiming(absl::Duration queue, absl::Duration compute,
               v1::ServerTiming* timing) {
  timing->set_queue_time_micros(
      std::max(timing->queue_time_micros(), absl::ToInt64Microseconds(queue)));
  timing->set_compute_time_micros(std::max(timing->compute_time_micros(),
                                           absl::ToInt64Microseconds(compute)));
}

// Collects the answers of one Embed call's inputs and answers the call when
// the last one is in. The first failure wins and cancels the other inputs.
class EmbedGather {
 public:
  EmbedGather(absl::AnyInvocable<void(absl::Status)> done,
              std::shared_ptr<batching::CancellationFlag> cancellation,
              batching::Batcher* batcher, v1::EmbedResponse* response,
              int num_inputs, const ResolvedEmbedOptions& options, int64_t dim)
      : done_(std::move(done)),
        cancellation_(std::move(cancellation)),
        batcher_(batcher),
        response_(response),
        options_(options),
        dim_(dim),
        remaining_(num_inputs) {}

  void InputDone(int index, const EmbedWork& work, const absl::Status& status) {
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      if (!status.ok() && status_.ok()) {
        status_ = status;
        cancel = true;
      } else if (status_.ok()) {
        Write(index, work);
      }
    }
    if (cancel) {
      cancellation_->Cancel();
      batcher_->NotifyCancelled();
    }
    Release(1);
  }

  // `count` inputs will never be computed (an earlier one was refused).
  void Release(int count) {
    absl::Status answer;
    {
      absl::MutexLock lock(&mu_);
      remaining_ -= count;
      if (remaining_ > 0) return;
      answer = status_;
    }
    std::move(done_)(answer);
  }

 private:
  void Write(int index, const EmbedWork& work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::Embedding* embedding = response_->mutable_embeddings(index);
    embedding->mutable_values()->Add(work.pooled.begin(), work.pooled.end());
    if (options_.include_token_embeddings) {
      v1::Tensor* tensor = embedding->mutable_token_embeddings();
      tensor->add_shape(work.num_token_rows);
      tensor->add_shape(dim_);
      tensor->set_dtype(options_.token_embeddings_dtype);
      EncodeFloats(work.token_rows, options_.token_embeddings_dtype,
                   tensor->mutable_data());
    }
    SetTiming(work.queue_time, work.compute_time, response_->mutable_timing());
  }

  absl::AnyInvocable<void(absl::Status)> done_;
  const std::shared_ptr<batching::CancellationFlag> cancellation_;
  batching::Batcher* const batcher_;
  v1::EmbedResponse* const response_;
  const ResolvedEmbedOptions options_;
  const int64_t dim_;
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int remaining_ ABSL_GUARDED_BY(mu_);
};

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
      metrics_(metrics),
      clock_(clock != nullptr ? clock : batching::RealClock::Get()) {}

absl::StatusOr<std::unique_ptr<FavorService>> FavorService::Create(
    const Options& options, const std::vector<const model::Model*>& models,
    metrics::Metrics* metrics, batching::Clock* clock) {
  if (models.empty()) {
    return absl::InvalidArgumentError("FavorService needs at least one model");
  }
  if (options.max_inputs_per_call < 1 || options.max_tokens_per_call < 1 ||
      options.max_stream_messages_in_flight < 1) {
    return absl::InvalidArgumentError(
        "FavorService::Options: max_inputs_per_call, max_tokens_per_call and "
        "max_stream_messages_in_flight must be >= 1");
  }
  std::unique_ptr<FavorService> service(
      new FavorService(options, metrics, clock));
  for (const model::Model* model : models) {
    RETURN_IF_ERROR(service->AddModel(model));
  }
  RETURN_IF_ERROR(service->ChooseDefaultModel());
  RETURN_IF_ERROR(service->StartAttendBatcher());
  return service;
}

absl::Status FavorService::AddModel(const model::Model* model) {
  if (models_.count(model->name()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("two models are named '", model->name(), "'"));
  }
  auto entry = std::make_unique<ModelEntry>();
  entry->model = model;
  entry->limits = LimitsFor(model->description(), options_.max_inputs_per_call,
                            options_.max_tokens_per_call);
  entry->runner = std::make_unique<EmbedRunner>(model, clock_);
  if (metrics_ != nullptr) {
    entry->observer =
        std::make_unique<metrics::BatcherMetrics>(metrics_, model->name());
  }
  batching::Batcher::Options batching = options_.embed_batching;
  batching.model_name = model->name();
  ASSIGN_OR_RETURN(entry->batcher,
                   batching::Batcher::Create(batching, entry->runner.get(),
                                             clock_, entry->observer.get()));
  models_[model->name()] = std::move(entry);
  return absl::OkStatus();
}

absl::Status FavorService::ChooseDefaultModel() {
  default_model_ = options_.default_model;
  if (default_model_.empty()) {
    default_model_ =
        models_.count("default") != 0 ? "default" : models_.begin()->first;
  }
  if (models_.count(default_model_) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_model '", default_model_, "' is not loaded"));
  }
  for (auto& [name, entry] : models_) {
    const batching::Batcher::Options& batching = entry->batcher->options();
    entry->info = DescribeModel(entry->model->description(), entry->limits,
                                batching, name == default_model_);
  }
  return absl::OkStatus();
}

absl::Status FavorService::StartAttendBatcher() {
  attend_runner_ = std::make_unique<AttendRunner>(clock_);
  ASSIGN_OR_RETURN(attend_batcher_,
                   batching::Batcher::Create(options_.attend_batching,
                                             attend_runner_.get(), clock_));
  return absl::OkStatus();
}

FavorService::~FavorService() { Shutdown(absl::ZeroDuration()); }

void FavorService::StartDraining() { draining_.store(true); }

void FavorService::Shutdown(absl::Duration drain_timeout) {
  StartDraining();
  const absl::Time deadline = clock_->Now() + drain_timeout;
  for (auto& [name, entry] : models_) {
    entry->batcher->Shutdown(
        std::max(deadline - clock_->Now(), absl::ZeroDuration()));
  }
  if (attend_batcher_ != nullptr) {
    attend_batcher_->Shutdown(
        std::max(deadline - clock_->Now(), absl::ZeroDuration()));
  }
}

absl::StatusOr<FavorService::ModelEntry*> FavorService::FindModel(
    absl::string_view name) {
  if (name.empty()) name = default_model_;
  auto it = models_.find(name);
  if (it != models_.end()) return it->second.get();
  std::vector<std::string> names;
  for (const auto& [model_name, entry] : models_) names.push_back(model_name);
  return absl::NotFoundError(absl::StrCat(
      "model '", name, "' not found; models: ", absl::StrJoin(names, ", ")));
}

absl::Status FavorService::CheckServing() const {
  if (!draining()) return absl::OkStatus();
  return absl::UnavailableError(
      "server is shutting down; retry on another replica");
}

grpc::ServerUnaryReactor* FavorService::Embed(
    grpc::CallbackServerContext* context, const v1::EmbedRequest* request,
    v1::EmbedResponse* response) {
  auto* call = new UnaryCall(context, metrics_, metrics::kMethodEmbed);
  absl::Status status = CheckServing();
  if (status.ok()) status = StartEmbed(call, *request, response);
  if (!status.ok()) call->Answer(status);
  return call;
}

absl::Status FavorService::StartEmbed(UnaryCall* call,
                                      const v1::EmbedRequest& request,
                                      v1::EmbedResponse* response) {
  ASSIGN_OR_RETURN(PreparedEmbed prepared, PrepareEmbed(request, response));
  call->set_model(prepared.entry->model->name());
  call->WatchBatcher(prepared.entry->batcher.get());
  EnqueueEmbed(
      std::move(prepared), call->deadline(), call->cancellation(),
      [call](absl::Status status) { call->Answer(status); }, response);
  return absl::OkStatus();
}

absl::StatusOr<FavorService::PreparedEmbed> FavorService::PrepareEmbed(
    const v1::EmbedRequest& request, v1::EmbedResponse* response) {
  PreparedEmbed prepared;
  ASSIGN_OR_RETURN(prepared.entry, FindModel(request.model()));
  const model::ModelDescription& model = prepared.entry->model->description();
  ASSIGN_OR_RETURN(prepared.inputs,
                   PrepareEmbedInputs(request, prepared.entry->limits));
  ASSIGN_OR_RETURN(prepared.options, ResolveEmbedOptions(request, model));
  prepared.priority = PriorityOf(request.priority());
  response->set_model(model.name);
  response->set_model_version(model.config.version);
  int64_t num_tokens = 0;
  for (const PreparedInput& input : prepared.inputs) {
    v1::Embedding* embedding = response->add_embeddings();
    embedding->set_num_tokens(static_cast<int64_t>(input.token_ids.size()));
    embedding->set_num_truncated_tokens(input.num_truncated_tokens);
    num_tokens += embedding->num_tokens();
  }
  response->set_num_tokens(num_tokens);
  return prepared;
}

void FavorService::EnqueueEmbed(
    PreparedEmbed prepared, absl::Time deadline,
    std::shared_ptr<batching::CancellationFlag> cancellation,
    absl::AnyInvocable<void(absl::Status)> done, v1::EmbedResponse* response) {
  ModelEntry* entry = prepared.entry;
  const int num_inputs = static_cast<int>(prepared.inputs.size());
  auto gather = std::make_shared<EmbedGather>(
      std::move(done), cancellation, entry->batcher.get(), response, num_inputs,
      prepared.options, entry->model->description().embedding_dim);
  for (int i = 0; i < num_inputs; ++i) {
    auto work = std::make_shared<EmbedWork>();
    work->token_ids = std::move(prepared.inputs[i].token_ids);
    work->pooling = prepared.options.pooling;
    work->normalize = prepared.options.normalize;
    work->include_token_embeddings = prepared.options.include_token_embeddings;
    auto request = std::make_unique<batching::Request>(
        [this, entry, gather, work, i](absl::Status status) {
          RecordQueueDepth(*entry);
          gather->InputDone(i, *work, status);
        });
    request->num_tokens = static_cast<int64_t>(work->token_ids.size());
    request->priority = prepared.priority;
    request->deadline = deadline;
    request->cancellation = cancellation;
    request->payload = work;
    if (metrics_ != nullptr) {
      metrics_->RecordInputLength(entry->model->name(), request->num_tokens);
    }
    if (!entry->batcher->Enqueue(std::move(request)).ok()) {
      gather->Release(num_inputs - i - 1);
      break;
    }
  }
  RecordQueueDepth(*entry);
}

void FavorService::RecordQueueDepth(const ModelEntry& entry) const {
  if (metrics_ == nullptr) return;
  metrics_->SetQueueDepth(entry.model->name(),
                          entry.batcher->NumQueuedRequests());
}

grpc::ServerUnaryReactor* FavorService::Attend(
    grpc::CallbackServerContext* context, const v1::AttendRequest* request,
    v1::AttendResponse* response) {
  auto* call = new UnaryCall(context, metrics_, metrics::kMethodAttend);
  absl::Status status = CheckServing();
  if (status.ok()) status = StartAttend(call, *request, response);
  if (!status.ok()) call->Answer(status);
  return call;
}

absl::Status FavorService::StartAttend(UnaryCall* call,
                                       const v1::AttendRequest& request,
                                       v1::AttendResponse* response) {
  auto work = std::make_shared<AttendWork>();
  ASSIGN_OR_RETURN(work->plan,
                   ValidateAttendRequest(request, options_.attend_limits));
  work->request = &request;
  work->response = response;
  auto queued =
      std::make_unique<batching::Request>([call, work](absl::Status status) {
        if (status.ok()) {
          SetTiming(work->queue_time, work->compute_time,
                    work->response->mutable_timing());
        }
        call->Answer(status);
      });
  queued->num_tokens = std::max<int64_t>(1, work->plan.cost_tokens);
  queued->priority = PriorityOf(request.priority());
  queued->deadline = call->deadline();
  queued->cancellation = call->cancellation();
  queued->payload = work;
  call->WatchBatcher(attend_batcher_.get());
  // Whatever Enqueue returns, the done callback has answered or will answer.
  attend_batcher_->Enqueue(std::move(queued)).IgnoreError();
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* FavorService::ListModels(
    grpc::CallbackServerContext* context, const v1::ListModelsRequest* request,
    v1::ListModelsResponse* response) {
  auto* call = new UnaryCall(context, metrics_, metrics::kMethodListModels);
  absl::Status status = CheckServing();
  if (status.ok()) {
    for (const auto& [name, entry] : models_) {
      *response->add_models() = entry->info;
    }
    response->set_default_model(default_model_);
  }
  call->Answer(status);
  return call;
}

grpc::ServerUnaryReactor* FavorService::GetModel(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request,
    v1::GetModelResponse* response) {
  auto* call = new UnaryCall(context, metrics_, metrics::kMethodGetModel);
  absl::Status status = CheckServing();
  if (status.ok()) {
    absl::StatusOr<ModelEntry*> entry = FindModel(request->model());
    status = entry.status();
    if (entry.ok()) {
      call->set_model((*entry)->model->name());
      *response->mutable_model() = (*entry)->info;
    }
  }
  call->Answer(status);
  return call;
}

}  // namespace favor::service
