// FavorService's models (favor_service.h, Reloading): creation with the
// start-up models, and the revisions installed, removed and described
// later.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/model/memory_estimate.h"
#include "server/service/favor_service.h"
#include "server/service/model_info.h"

namespace favor::service {

absl::StatusOr<std::unique_ptr<FavorService>> FavorService::Create(
    const Options& options, const std::vector<const model::Model*>& models,
    metrics::Metrics* metrics, batching::Clock* clock) {
  std::vector<Servable> servables;
  for (const model::Model* model : models) {
    // Owned by the caller: the service never frees it.
    servables.push_back(
        {std::shared_ptr<const model::Model>(model, [](const model::Model*) {}),
         "", nullptr});
  }
  return Create(options, std::move(servables), metrics, clock);
}

absl::StatusOr<std::unique_ptr<FavorService>> FavorService::Create(
    const Options& options, std::vector<Servable> models,
    metrics::Metrics* metrics, batching::Clock* clock) {
  if (models.empty()) {
    return absl::InvalidArgumentError("FavorService needs at least one model");
  }
  if (options.max_inputs_per_call < 1 || options.max_tokens_per_call < 1 ||
      options.max_stream_messages_in_flight < 1 ||
      options.max_stream_answer_bytes_in_flight < 1 ||
      options.max_answer_message_bytes < 1 ||
      options.max_text_bytes_per_call < 1 || options.max_spans_per_input < 0) {
    return absl::InvalidArgumentError(
        "FavorService::Options: max_inputs_per_call, max_tokens_per_call, "
        "max_stream_messages_in_flight, max_stream_answer_bytes_in_flight, "
        "max_answer_message_bytes and max_text_bytes_per_call must be >= 1, "
        "max_spans_per_input >= 0");
  }
  std::unique_ptr<FavorService> service(
      new FavorService(options, metrics, clock));
  RETURN_IF_ERROR(service->ChooseDefaultModel(models));
  for (Servable& model : models) {
    RETURN_IF_ERROR(service->InstallModel(std::move(model)));
  }
  RETURN_IF_ERROR(service->StartAttendBatcher());
  RETURN_IF_ERROR(service->StartTokenizerPool());
  return service;
}

absl::StatusOr<std::unique_ptr<ServingModel>> FavorService::NewServingModel(
    Servable servable) const {
  const model::Model* model = servable.model.get();
  auto entry = std::make_unique<ServingModel>();
  entry->name = model->name();
  entry->revision = std::move(servable.revision);
  entry->model = std::move(servable.model);
  entry->on_freed = std::move(servable.on_freed);
  EmbedLimits call_limits;
  call_limits.max_inputs_per_call = options_.max_inputs_per_call;
  call_limits.max_tokens_per_call = options_.max_tokens_per_call;
  call_limits.max_text_bytes_per_call = options_.max_text_bytes_per_call;
  call_limits.max_spans_per_input = options_.max_spans_per_input;
  entry->limits = LimitsFor(model->description(), call_limits);
  entry->runner = std::make_unique<EmbedRunner>(model, clock_);
  entry->observer =
      std::make_unique<metrics::BatcherMetrics>(metrics_, model->name());
  batching::Batcher::Options batching = options_.embed_batching;
  batching.model_name = model->name();
  batching.batch_memory_overhead_bytes =
      model::EstimateBatchOverheadBytes(model->description().memory);
  ASSIGN_OR_RETURN(entry->batcher, batching::JobBatcher<EmbedWork>::Create(
                                       batching, entry->runner.get(), clock_,
                                       entry->observer.get()));
  entry->info = DescribeModel(model->description(), entry->limits,
                              entry->batcher->batcher()->options(),
                              entry->name == default_model_);
  entry->info.set_revision(entry->revision);
  return entry;
}

absl::Status FavorService::InstallModel(Servable model) {
  ASSIGN_OR_RETURN(std::unique_ptr<ServingModel> entry,
                   NewServingModel(std::move(model)));
  registry_.Install(std::move(entry));
  return absl::OkStatus();
}

absl::Status FavorService::RemoveModel(absl::string_view name) {
  if (name == default_model_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", name,
        "' is the default model: it keeps serving until a restart"));
  }
  return registry_.Remove(name);
}

void FavorService::RecordLoadFailure(absl::string_view name,
                                     const absl::Status& status) {
  registry_.RecordFailure(name, status);
}

void FavorService::ClearLoadFailure(absl::string_view name) {
  registry_.ClearFailure(name);
}

absl::Status FavorService::ChooseDefaultModel(
    const std::vector<Servable>& models) {
  std::set<std::string> names;
  for (const Servable& model : models) {
    if (!names.insert(model.model->name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two models are named '", model.model->name(), "'"));
    }
  }
  default_model_ = options_.default_model;
  if (default_model_.empty()) {
    default_model_ = names.count("default") != 0 ? "default" : *names.begin();
  }
  if (names.count(default_model_) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_model '", default_model_, "' is not loaded"));
  }
  return absl::OkStatus();
}

v1::ModelInfo FavorService::InfoOf(const ServingModel& model) const {
  v1::ModelInfo info = model.info;
  const std::map<std::string, absl::Status> failures = registry_.Failures();
  auto failure = failures.find(model.name);
  if (failure != failures.end()) {
    info.set_load_error(std::string(failure->second.message()));
  }
  return info;
}

}  // namespace favor::service
