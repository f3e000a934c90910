#include "server/model/model_repository.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/status_macros.h"

namespace favor::model {

absl::StatusOr<std::vector<std::string>> ModelRepository::ListModels(
    const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(path, error)) {
    if (!fs::exists(path, error)) {
      return absl::NotFoundError(
          absl::StrCat("model repository ", path, " does not exist"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("model repository ", path, " is not a folder"));
  }
  std::vector<std::string> names;
  fs::directory_iterator it(path, error), end;
  for (; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::error_code type_error;
    if (name.empty() || name[0] == '.' || !it->is_directory(type_error)) {
      continue;
    }
    names.push_back(name);
  }
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot list model repository ", path, ": ", error.message()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Load(
    const std::string& path, const ModelOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<std::string> names, ListModels(path));
  std::unique_ptr<ModelRepository> repository(new ModelRepository(path));
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<Model>> model =
        Model::Load(path + "/" + name, options);
    if (model.ok()) {
      repository->models_.emplace(name, *std::move(model));
    } else {
      repository->failures_.push_back({name, model.status()});
    }
  }
  return repository;
}

std::vector<std::string> ModelRepository::ModelNames() const {
  std::vector<std::string> names;
  for (const auto& [name, model] : models_) names.push_back(name);
  return names;
}

absl::StatusOr<const Model*> ModelRepository::Find(
    absl::string_view name) const {
  auto it = models_.find(name);
  if (it != models_.end()) return it->second.get();
  for (const LoadFailure& failure : failures_) {
    if (failure.name == name) {
      return absl::NotFoundError(absl::StrCat(
          "model '", name, "' failed to load: ", failure.status.message()));
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "no model '", name, "' in ", path_, " (models: ",
      models_.empty() ? "none" : absl::StrJoin(ModelNames(), ", "), ")"));
}

}  // namespace favor::model
