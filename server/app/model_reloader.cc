#include "server/app/model_reloader.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "server/attention/kernel.h"
#include "server/common/memory_info.h"
#include "server/common/status_macros.h"
#include "server/model/model_fingerprint.h"
#include "server/model/model_repository.h"

namespace favor {
namespace {

void PublishModelInfo(const model::Model& model, metrics::Metrics* metrics) {
  metrics->SetModelInfo(
      {model.name(), model.config().version,
       std::string(attention::KernelName(model.config().attention.kernel)),
       model.description().device,
       std::string(model::NameOf(model.description().dtype))});
}

}  // namespace

// What a revision's weights hold once loaded: the elements read from
// model.safetensors at the compute dtype's width, and the projections drawn
// at load time (float32, one per attention sublayer that stores none:
// small for a real model, but a 3 MB folder of 1,024 layers with 65,536
// features draws 2.1 GB).
// LibTorch's own overhead is not counted.
int64_t BudgetedWeightBytes(const model::Model& model) {
  const model::ModelDescription& description = model.description();
  const model::ModelConfig& config = model.config();
  // int8 keeps the float32 weights; its quantised copies (a byte per
  // linear-layer weight) stand in for float32's packed ones, which are not
  // counted either.
  const int64_t element_bytes =
      description.dtype == model::ComputeDType::kFloat32 ||
              description.dtype == model::ComputeDType::kInt8
          ? 4
          : 2;
  int64_t drawn_bytes = 0;
  if (attention::TraitsOf(config.attention.kernel).uses_projection) {
    const int64_t sublayers = config.num_hidden_layers *
                              (config.block == model::BlockType::kIsab ? 2 : 1);
    drawn_bytes =
        std::max<int64_t>(sublayers - description.num_stored_projections, 0) *
        config.attention.num_random_features * config.head_dim() * 4;
  }
  return description.parameter_count * element_bytes + drawn_bytes;
}

absl::Status WarmUpModel(const model::Model& model) {
  const absl::Time start = absl::Now();
  const std::vector<int32_t> token_ids = {0};
  const std::vector<int64_t> offsets = {0, 1};
  absl::Status status = model.Embed(token_ids, offsets).status();
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("warm-up of model '", model.name(),
                                     "': ", status.message()));
  }
  LOG(INFO) << "event=model_warmed_up model=" << model.name()
            << " seconds=" << absl::ToDoubleSeconds(absl::Now() - start);
  return absl::OkStatus();
}

ModelReloader::ModelReloader(Options options) : options_(std::move(options)) {}

std::string ModelReloader::PathOf(const std::string& name) const {
  return options_.repository + "/" + name;
}

absl::StatusOr<std::vector<std::string>> ModelReloader::FolderNames() const {
  return model::ModelRepository::ListModels(options_.repository);
}

absl::StatusOr<ModelReloader::Loaded> ModelReloader::LoadAll() {
  ASSIGN_OR_RETURN(const std::vector<std::string> names, FolderNames());
  Loaded loaded;
  for (const std::string& name : names) {
    Folder& folder = folders_[name];
    folder.signature = model::FolderSignature(PathOf(name));
    absl::StatusOr<std::string> revision = model::FolderRevision(PathOf(name));
    absl::StatusOr<service::FavorService::Servable> servable =
        revision.ok() ? LoadRevision(name, *revision, /*count_weights=*/false)
                      : revision.status();
    if (!servable.ok()) {
      Fail(name, servable.status(), nullptr);
      loaded.failures.emplace_back(name, servable.status());
      continue;
    }
    folder.revision = *revision;
    folder.weight_bytes = BudgetedWeightBytes(*servable->model);
    loaded.models.push_back(*std::move(servable));
  }
  ReleaseFreedHeapMemory();
  if (loaded.models.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no model loaded from --model_repository=", options_.repository, " (",
        loaded.failures.size(), " failed to load)"));
  }
  return loaded;
}

absl::StatusOr<service::FavorService::Servable> ModelReloader::LoadRevision(
    const std::string& name, const std::string& revision, bool count_weights) {
  ASSIGN_OR_RETURN(std::unique_ptr<model::Model> model,
                   model::Model::Load(PathOf(name), options_.model));
  const int64_t bytes = BudgetedWeightBytes(*model);
  batching::MemoryBudget* budget = count_weights ? budget_.load() : nullptr;
  if (budget != nullptr) {
    absl::Status fits = budget->AddWeights(bytes);
    if (!fits.ok()) {
      return absl::Status(
          fits.code(),
          absl::StrCat("revision ", revision,
                       " does not fit beside what serves: ", fits.message()));
    }
  }
  if (count_weights) {
    absl::Status warm = WarmUpModel(*model);
    if (!warm.ok()) {
      if (budget != nullptr) budget->RemoveWeights(bytes);
      return warm;
    }
  }
  const auto& tokenizer = model->description().tokenizer;
  LOG(INFO) << "event=model_loaded model=" << name << " revision=" << revision
            << " version=\"" << model->config().version
            << "\" device=" << model->description().device
            << " dtype=" << model::NameOf(model->description().dtype)
            << " parameters=" << model->description().parameter_count
            << " block_tokens=" << model->description().memory.block_tokens
            << " sub_batch_tokens=" << model->description().sub_batch_tokens
            << " tokenizer="
            << (tokenizer ? model->config().tokenizer.file : "none");
  PublishModelInfo(*model, options_.metrics);
  service::FavorService::Servable servable;
  servable.model = std::move(model);
  servable.revision = revision;
  // Start-up revisions are in the budget's measured resident set. Only a
  // pass retires a revision, counting its weights as retiring first
  // (ReloadFolder, RemoveGone); they come back when it is freed.
  servable.on_freed = [this, bytes] {
    batching::MemoryBudget* freed_from = budget_.load();
    if (freed_from != nullptr) freed_from->FreeRetiredWeights(bytes);
  };
  return servable;
}

void ModelReloader::Reload(service::FavorService* service, bool retry_failed) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::string>> names = FolderNames();
  if (!names.ok()) {
    LOG(ERROR) << "event=model_reload_failed error=\"" << names.status()
               << "\" (every model keeps serving)";
    return;
  }
  int changed = 0;
  for (const std::string& name : *names) {
    const std::string signature = model::FolderSignature(PathOf(name));
    auto it = folders_.find(name);
    if (it != folders_.end() && it->second.signature == signature &&
        !(retry_failed && it->second.failed)) {
      continue;
    }
    ReloadFolder(name, service);
    ++changed;
  }
  changed += RemoveGone(*names, service);
  if (changed > 0) ReleaseFreedHeapMemory();
  LOG_IF(INFO, changed > 0 || VLOG_IS_ON(1))
      << "event=model_reload_done folders_changed=" << changed
      << " seconds=" << absl::ToDoubleSeconds(absl::Now() - start);
}

void ModelReloader::ReloadFolder(const std::string& name,
                                 service::FavorService* service) {
  Folder& folder = folders_[name];
  const std::string signature = model::FolderSignature(PathOf(name));
  absl::StatusOr<std::string> revision = model::FolderRevision(PathOf(name));
  if (!revision.ok()) {
    folder.signature = signature;
    Fail(name, revision.status(), service);
    return;
  }
  if (*revision == folder.revision && service->registry().Contains(name)) {
    // Touched, not changed, or put back as it was after a failed load: what
    // serves is what the folder holds.
    folder.signature = signature;
    folder.failed = false;
    service->ClearLoadFailure(name);
    return;
  }
  // From before the new revision is counted until the old one is freed,
  // the old one's weights are on their way out: a request that needs them
  // is told to retry, not that it can never run (MemoryBudget).
  batching::MemoryBudget* budget = budget_.load();
  const int64_t replaced_bytes =
      service->registry().Contains(name) ? folder.weight_bytes : 0;
  if (budget != nullptr) budget->RetireWeights(replaced_bytes);
  // The old revision keeps serving after all.
  auto keep_replaced = [budget, replaced_bytes] {
    if (budget != nullptr) budget->UnretireWeights(replaced_bytes);
  };
  absl::StatusOr<service::FavorService::Servable> servable =
      LoadRevision(name, *revision, /*count_weights=*/true);
  if (servable.ok() && model::FolderSignature(PathOf(name)) != signature) {
    // Still being written: the next pass (or SIGHUP) looks again.
    LOG(WARNING) << "event=model_changed_while_loading model=" << name;
    const int64_t bytes = BudgetedWeightBytes(*servable->model);
    servable->model.reset();
    if (budget != nullptr) budget->RemoveWeights(bytes);  // It never served.
    keep_replaced();
    return;
  }
  folder.signature = signature;
  if (!servable.ok()) {
    keep_replaced();
    Fail(name, servable.status(), service);
    return;
  }
  const int64_t bytes = BudgetedWeightBytes(*servable->model);
  const absl::Status installed = service->InstallModel(*std::move(servable));
  if (!installed.ok()) {
    // Destroyed unserved, without its on_freed.
    if (budget != nullptr) budget->RemoveWeights(bytes);
    keep_replaced();
    Fail(name, installed, service);
    return;
  }
  folder.weight_bytes = bytes;
  LOG(INFO) << "event=model_revision_serving model=" << name
            << " revision=" << *revision << " replaced="
            << (folder.revision.empty() ? "none" : folder.revision);
  folder.revision = *revision;
  folder.failed = false;
}

int ModelReloader::RemoveGone(const std::vector<std::string>& names,
                              service::FavorService* service) {
  int acted_on = 0;
  for (auto it = folders_.begin(); it != folders_.end();) {
    if (std::binary_search(names.begin(), names.end(), it->first) ||
        it->second.signature == "(gone)") {
      ++it;
      continue;
    }
    const std::string& name = it->first;
    ++acted_on;
    if (!service->registry().Contains(name)) {
      it = folders_.erase(it);
      continue;
    }
    batching::MemoryBudget* budget = budget_.load();
    if (budget != nullptr) budget->RetireWeights(it->second.weight_bytes);
    const absl::Status removed = service->RemoveModel(name);
    if (!removed.ok()) {
      if (budget != nullptr) budget->UnretireWeights(it->second.weight_bytes);
      LOG(ERROR) << "event=model_remove_refused model=" << name << " error=\""
                 << removed.message() << "\"";
      service->RecordLoadFailure(
          name, absl::FailedPreconditionError(
                    absl::StrCat("its folder is gone; ", removed.message())));
      it->second.signature = "(gone)";
      ++it;
      continue;
    }
    LOG(INFO) << "event=model_removed model=" << name;
    options_.metrics->ClearModelInfo(name);
    it = folders_.erase(it);
  }
  return acted_on;
}

void ModelReloader::Fail(const std::string& name, const absl::Status& status,
                         service::FavorService* service) {
  LOG(ERROR) << "event=model_load_failed model=" << name << " error=\""
             << status.message() << "\""
             << (service != nullptr ? " (what served keeps serving)" : "");
  options_.metrics->RecordModelLoadFailure(name);
  if (service != nullptr) service->RecordLoadFailure(name, status);
  folders_[name].failed = true;
}

}  // namespace favor
