#include "server/service/model_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "glog/logging.h"

namespace favor::service {

ModelRegistry::ModelRegistry() : free_thread_([this] { FreeLoop(); }) {}

ModelRegistry::~ModelRegistry() {
  for (batching::Batcher* batcher : StopFreeing()) {
    batcher->Shutdown(absl::ZeroDuration());
  }
  std::list<Slot> slots;
  std::map<std::string, Lease, std::less<>> serving;
  {
    absl::MutexLock lock(&mu_);
    serving.swap(serving_);
  }
  serving.clear();  // Runs the deleters, which lock mu_.
  absl::MutexLock lock(&mu_);
  slots.swap(slots_);
}

void ModelRegistry::Install(std::unique_ptr<ServingModel> model) {
  const std::string name = model->name;
  Lease replaced;  // Dropped after the lock: see Retire.
  absl::MutexLock lock(&mu_);
  slots_.push_back(Slot{std::move(model)});
  Slot* slot = &slots_.back();
  // The deleter frees nothing: it marks the slot for FreeLoop, so that
  // whichever thread drops the last lease does no more than this.
  Lease lease(slot->model.get(), [this, slot](const ServingModel*) {
    absl::MutexLock released_lock(&mu_);
    slot->released = true;
  });
  auto it = serving_.find(name);
  if (it != serving_.end()) replaced = Retire(it);
  serving_.emplace(name, std::move(lease));
  failures_.erase(name);
}

absl::Status ModelRegistry::Remove(absl::string_view name) {
  Lease removed;
  {
    absl::MutexLock lock(&mu_);
    auto it = serving_.find(name);
    if (it == serving_.end()) {
      return absl::NotFoundError(absl::StrCat("no model '", name, "'"));
    }
    removed = Retire(it);
  }
  ClearFailure(name);
  return absl::OkStatus();
}

ModelRegistry::Lease ModelRegistry::Retire(
    std::map<std::string, Lease, std::less<>>::iterator it) {
  Lease lease = std::move(it->second);
  serving_.erase(it);
  ++num_retiring_;
  return lease;
}

void ModelRegistry::RecordFailure(absl::string_view name,
                                  const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  failures_[std::string(name)] = status;
}

void ModelRegistry::ClearFailure(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  auto failure = failures_.find(name);
  if (failure != failures_.end()) failures_.erase(failure);
}

absl::StatusOr<ModelRegistry::Lease> ModelRegistry::Find(
    absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = serving_.find(name);
  if (it != serving_.end()) return it->second;
  auto failure = failures_.find(name);
  if (failure != failures_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "model '", name, "' failed to load: ", failure->second.message()));
  }
  std::vector<std::string> names;
  for (const auto& [model, lease] : serving_) names.push_back(model);
  return absl::NotFoundError(absl::StrCat(
      "model '", name, "' not found; models: ", absl::StrJoin(names, ", ")));
}

bool ModelRegistry::Contains(absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  return serving_.find(name) != serving_.end();
}

std::vector<ModelRegistry::Lease> ModelRegistry::Serving() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<Lease> leases;
  for (const auto& [name, lease] : serving_) leases.push_back(lease);
  return leases;
}

std::map<std::string, absl::Status> ModelRegistry::Failures() const {
  absl::ReaderMutexLock lock(&mu_);
  return {failures_.begin(), failures_.end()};
}

int ModelRegistry::num_retiring() const {
  absl::ReaderMutexLock lock(&mu_);
  return num_retiring_;
}

bool ModelRegistry::WaitUntilFreed(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return num_retiring_ == 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&none), timeout);
}

bool ModelRegistry::AnyReleased() const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [](const Slot& slot) { return slot.released; });
}

void ModelRegistry::FreeLoop() {
  while (true) {
    std::list<Slot> released;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || AnyReleased();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      for (auto it = slots_.begin(); it != slots_.end();) {
        auto next = std::next(it);
        if (it->released) released.splice(released.end(), slots_, it);
        it = next;
      }
    }
    for (Slot& slot : released) {
      const std::string name = slot.model->name;
      const std::string revision = slot.model->revision;
      absl::AnyInvocable<void()> on_freed = std::move(slot.model->on_freed);
      // Empty by now: every call that reached it held a lease.
      if (slot.model->batcher)
        slot.model->batcher->batcher()->Shutdown(absl::ZeroDuration());
      slot.model.reset();
      if (on_freed) on_freed();
      LOG(INFO) << "event=model_revision_freed model=" << name
                << " revision=" << revision;
    }
    absl::MutexLock lock(&mu_);
    num_retiring_ -= static_cast<int>(released.size());
  }
}

std::vector<batching::Batcher*> ModelRegistry::StopFreeing() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (free_thread_.joinable()) free_thread_.join();
  std::vector<batching::Batcher*> batchers;
  absl::MutexLock lock(&mu_);
  for (Slot& slot : slots_) {
    if (slot.model->batcher) {
      batchers.push_back(slot.model->batcher->batcher().get());
    }
  }
  return batchers;
}

}  // namespace favor::service
