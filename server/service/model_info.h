// ListModels / GetModel answers, built from a model's description and the
// limits the server enforces for it (one place for the numbers: the same
// Options that the batcher and the edge checks use).
#ifndef FAVOR_SERVER_SERVICE_MODEL_INFO_H_
#define FAVOR_SERVER_SERVICE_MODEL_INFO_H_

#include "favor/v1/favor.pb.h"
#include "server/batching/batcher.h"
#include "server/model/model.h"
#include "server/service/embed_validation.h"

namespace favor::service {

v1::ModelInfo DescribeModel(const model::ModelDescription& model,
                            const EmbedLimits& call_limits,
                            const batching::Batcher::Options& batching,
                            bool is_default);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_MODEL_INFO_H_
