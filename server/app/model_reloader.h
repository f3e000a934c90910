// favor-server's model repository, loaded at start-up and reloaded in place
// on SIGHUP or every --model_repository_poll_seconds (main.cc wires it; the
// contract is in docs/server.md, Reloading models).
//
// A pass looks at every folder of the repository. A folder whose
// signature (file names, sizes, modification times: model_fingerprint.h)
// is what the last pass saw is left alone. Otherwise its revision (a
// fingerprint of its bytes) is computed; a revision other than the one
// serving is loaded, counted against the memory budget beside the old
// one, warmed up, and installed (FavorService::InstallModel): new calls go
// to it, the old revision finishes its calls and is freed. A folder that
// is gone is removed (its calls finish first), except the default model's.
// From the start of a replacement or removal until the old revision is
// freed, the budget counts its weights as retiring (so a request that
// needs that room is told to retry, not that it can never run); a failed
// replacement takes that back.
// Any failure (unreadable file, bad config, no room in the memory budget,
// warm-up error) is logged (event=model_load_failed), counted in
// favor_model_load_failures_total{model} and shown by GetModel/ListModels;
// whatever served keeps serving. A folder that failed is tried again once
// its signature changes.
//
// Runs on the thread that calls it (main's), never on a serving thread.
// Not thread-safe: one pass at a time.
#ifndef FAVOR_SERVER_APP_MODEL_RELOADER_H_
#define FAVOR_SERVER_APP_MODEL_RELOADER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/batching/memory_budget.h"
#include "server/metrics/metrics.h"
#include "server/model/model.h"
#include "server/service/favor_service.h"

namespace favor {

// One small Embed, so that the first call to `model` pays no warm-up cost.
absl::Status WarmUpModel(const model::Model& model);

// The bytes a revision's weights are counted at in the memory budget: the
// elements of model.safetensors at the compute dtype's width, and the
// projections drawn at load time (float32).
int64_t BudgetedWeightBytes(const model::Model& model);

class ModelReloader {
 public:
  struct Options {
    std::string repository;  // --model_repository
    model::ModelOptions model;
    // Not null; must outlive the reloader.
    metrics::Metrics* metrics = nullptr;
  };

  // What start-up loaded: the models to serve and the folders that failed.
  struct Loaded {
    std::vector<service::FavorService::Servable> models;
    std::vector<std::pair<std::string, absl::Status>> failures;
  };

  explicit ModelReloader(Options options);
  ModelReloader(const ModelReloader&) = delete;
  ModelReloader& operator=(const ModelReloader&) = delete;

  // The folder names of the repository (sorted); NOT_FOUND or
  // INVALID_ARGUMENT when it is not a readable folder.
  absl::StatusOr<std::vector<std::string>> FolderNames() const;
  // Start-up: loads every folder (not warmed up; failures logged and
  // counted). NOT_FOUND when no model loads.
  absl::StatusOr<Loaded> LoadAll();
  // From now on, new revisions are counted in `budget` (null: none), and
  // freed ones given back. Set once, after LoadAll, whose weights the
  // budget counts as resident.
  void set_memory_budget(batching::MemoryBudget* budget) { budget_ = budget; }
  // One reload pass over the repository (see the file comment). Logs its
  // end at INFO when a folder changed (a poll that finds nothing new logs
  // only with GLOG_v=1 in the environment, not a line a second). With
  // `retry_failed` (SIGHUP), a folder whose last load failed is loaded
  // again even if unchanged: a load refused for want of memory while
  // batches ran may fit now.
  void Reload(service::FavorService* service, bool retry_failed = false);

  // Implementation details follow.
 private:
  // What the last pass saw of a folder.
  struct Folder {
    std::string signature;
    std::string revision;      // Of the revision serving; empty if none.
    int64_t weight_bytes = 0;  // Of the revision serving, as budgeted.
    bool failed = false;       // Its last load failed.
  };

  std::string PathOf(const std::string& name) const;
  // Loads `name` (a revision other than the one serving) and installs it.
  void ReloadFolder(const std::string& name, service::FavorService* service);
  absl::StatusOr<service::FavorService::Servable> LoadRevision(
      const std::string& name, const std::string& revision, bool count_weights);
  // Removes the models whose folder is gone; how many folders it acted on.
  int RemoveGone(const std::vector<std::string>& names,
                 service::FavorService* service);
  void Fail(const std::string& name, const absl::Status& status,
            service::FavorService* service);

  const Options options_;
  std::atomic<batching::MemoryBudget*> budget_{nullptr};
  std::map<std::string, Folder> folders_;
};

}  // namespace favor

#endif  // FAVOR_SERVER_APP_MODEL_RELOADER_H_
