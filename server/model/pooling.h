// Pooling and normalisation of a packed batch's output vectors
// (docs/models.md, Pooling). Implementation detail of server/model:
// includes ATen, not for other modules.
#ifndef FAVOR_SERVER_MODEL_POOLING_H_
#define FAVOR_SERVER_MODEL_POOLING_H_

#include <ATen/core/Tensor.h>

#include "server/model/encoder.h"
#include "server/model/model_config.h"

namespace favor::model::internal {

// Pools each sequence's rows of `vectors` (float32 or bfloat16) into one
// float32 row, or keeps them all (as float32) with Pooling::kNone. `query`
// is pooler.query (H), needed by kAttention only. Every reduction runs in
// float32 over one sequence's rows, so a sequence's result does not depend
// on the others in the batch.
PackedVectors Pool(const PackedVectors& vectors, Pooling pooling,
                   const at::Tensor& query);

// Divides each row by max(‖row‖₂, 1e-12), in place.
void NormalizeRows(at::Tensor& rows);

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_POOLING_H_
