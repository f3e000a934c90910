// A model repository: a folder of models, `<repository>/<name>/config.json`
// + `model.safetensors` (docs/models.md), loaded once at start-up.
//
// Every sub-folder is a model, named after the folder; hidden folders (".")
// and plain files (a README) are skipped. A model that fails to load does
// not stop the others: its name and the loader's message are kept in
// failures(), for the server to log and for GetModel to explain.
//
// LibTorch-free header. Thread safety: const after Load; Find may be called
// from any thread.
#ifndef FAVOR_SERVER_MODEL_MODEL_REPOSITORY_H_
#define FAVOR_SERVER_MODEL_MODEL_REPOSITORY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/model/model.h"

namespace favor::model {

class ModelRepository {
 public:
  struct LoadFailure {
    std::string name;
    absl::Status status;  // the loader's error, naming the file
  };

  // The model names under `path` (sorted), without loading anything.
  // NOT_FOUND or INVALID_ARGUMENT when `path` is not a readable folder.
  static absl::StatusOr<std::vector<std::string>> ListModels(
      const std::string& path);

  // Loads every model under `path` with `options`. Fails only when the
  // folder cannot be listed; individual models that fail are in failures().
  static absl::StatusOr<std::unique_ptr<ModelRepository>> Load(
      const std::string& path, const ModelOptions& options = {});

  ModelRepository(const ModelRepository&) = delete;
  ModelRepository& operator=(const ModelRepository&) = delete;

  const std::string& path() const { return path_; }
  // Names of the loaded models, sorted.
  std::vector<std::string> ModelNames() const;
  // The model called `name`: NOT_FOUND (listing the models there are, or
  // the load failure when it failed) otherwise.
  absl::StatusOr<const Model*> Find(absl::string_view name) const;
  const std::vector<LoadFailure>& failures() const { return failures_; }
  size_t size() const { return models_.size(); }

  // ---- Implementation details follow. ----
 private:
  explicit ModelRepository(std::string path) : path_(std::move(path)) {}

  std::string path_;
  std::map<std::string, std::unique_ptr<Model>, std::less<>> models_;
  std::vector<LoadFailure> failures_;
};

}  // namespace favor::model

#endif  // FAVOR_SERVER_MODEL_MODEL_REPOSITORY_H_
