// One revision of one model as the service serves it: the model, its
// batcher and what GetModel says of it. Owned by the ModelRegistry
// (model_registry.h); calls hold it through a lease for their whole life.
#ifndef FAVOR_SERVER_SERVICE_SERVING_MODEL_H_
#define FAVOR_SERVER_SERVICE_SERVING_MODEL_H_

#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "favor/v1/favor.pb.h"
#include "server/batching/job.h"
#include "server/metrics/batcher_metrics.h"
#include "server/model/model.h"
#include "server/service/embed_runner.h"
#include "server/service/embed_validation.h"

namespace favor::service {

struct ServingModel {
  // The name requests give (the model's folder), and the revision
  // (model_fingerprint.h; empty for a model not loaded from a folder).
  std::string name;
  std::string revision;
  // Null only in tests of the registry, which need no model.
  std::shared_ptr<const model::Model> model;
  EmbedLimits limits;
  // What ListModels and GetModel report, revision included.
  v1::ModelInfo info;
  std::unique_ptr<batching::JobRunner<EmbedWork>> runner;
  std::unique_ptr<metrics::BatcherMetrics> observer;
  // Last: destroyed first, while the runner it calls still exists.
  std::unique_ptr<batching::JobBatcher<EmbedWork>> batcher;
  // Runs once this revision is destroyed, on the registry's thread (e.g.
  // to give its weights' bytes back to the memory budget).
  absl::AnyInvocable<void()> on_freed;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_SERVING_MODEL_H_
