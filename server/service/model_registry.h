// The models a FavorService serves now, swapped in place by a reload
// (docs/server.md, Reloading models) without a call ever seeing a
// half-swapped state.
//
// A call looks its model up once (Find) and holds the lease it gets until
// it is answered: the lease keeps that revision, its batcher and its
// weights alive, whatever is installed meanwhile. Install() makes a new
// revision take every later lookup at once; the revision it replaces (or
// that Remove() takes out) is retired: it serves no new call, its batcher
// keeps computing the calls that hold it, and when the last lease is gone
// the registry's own thread shuts its (now empty) batcher down, destroys it
// and runs its on_freed. A lease is never the last owner of a revision, so
// no batch worker or gRPC thread ever destroys one (a batcher cannot join
// its own thread).
//
// Failures: RecordFailure() keeps why a model's latest load failed, for
// GetModel and ListModels; it changes nothing that serves. Install() of
// that name clears it.
//
// Thread-safe; Find() takes a reader lock and copies one shared_ptr.
#ifndef FAVOR_SERVER_SERVICE_MODEL_REGISTRY_H_
#define FAVOR_SERVER_SERVICE_MODEL_REGISTRY_H_

#include <list>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/service/serving_model.h"

namespace favor::service {

class ModelRegistry {
 public:
  // Shared ownership for one call's life; see the class comment.
  using Lease = std::shared_ptr<const ServingModel>;

  ModelRegistry();
  // Shuts every batcher down at once (StopFreeing()), then destroys every
  // revision. No lease may outlive the registry.
  ~ModelRegistry();
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Serves `model` under model->name from now on, retiring the revision it
  // replaces, and clears that name's failure.
  void Install(std::unique_ptr<ServingModel> model);
  // Retires `name`'s revision; NOT_FOUND when none serves.
  absl::Status Remove(absl::string_view name);
  // Why `name`'s latest load failed (shown by Failures()).
  void RecordFailure(absl::string_view name, const absl::Status& status);
  // Forgets `name`'s failure: its folder holds what serves again.
  void ClearFailure(absl::string_view name);

  // The revision serving `name` now: NOT_FOUND, naming the load failure
  // when there is one, or the models there are.
  absl::StatusOr<Lease> Find(absl::string_view name) const;
  bool Contains(absl::string_view name) const;
  // Every revision serving now, by name.
  std::vector<Lease> Serving() const;
  // Every recorded failure, by name, whether or not an older revision
  // serves.
  std::map<std::string, absl::Status> Failures() const;
  // Revisions retired but not freed yet (calls still hold them).
  int num_retiring() const;
  // Blocks until every retired revision is freed or `timeout` passes;
  // false on timeout.
  bool WaitUntilFreed(absl::Duration timeout) const;

  // For a shutdown: stops freeing (everything is kept until the registry
  // is destroyed) and returns every batcher, serving and retiring, for the
  // caller to drain. Idempotent.
  std::vector<batching::Batcher*> StopFreeing();

  // Implementation details follow.
 private:
  struct Slot {
    std::unique_ptr<ServingModel> model;
    bool released = false;  // The last lease is gone.
  };
  // Frees the released slots until StopFreeing().
  void FreeLoop();
  bool AnyReleased() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `it` out of service; the caller drops the lease it returns
  // after letting go of mu_ (the last one runs the deleter, which locks it).
  Lease Retire(std::map<std::string, Lease, std::less<>>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, Lease, std::less<>> serving_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Status, std::less<>> failures_
      ABSL_GUARDED_BY(mu_);
  // Every revision installed and not yet freed; std::list keeps a slot's
  // address while others come and go (the leases' deleters point at it).
  std::list<Slot> slots_ ABSL_GUARDED_BY(mu_);
  int num_retiring_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread free_thread_;  // Last: started once the rest exists.
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_MODEL_REGISTRY_H_
