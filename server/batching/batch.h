// A formed batch: the requests the batcher hands to a ModelRunner together.
#ifndef FAVOR_SERVER_BATCHING_BATCH_H_
#define FAVOR_SERVER_BATCHING_BATCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "server/batching/request.h"

namespace favor::batching {

// Requests to run together. Never empty when it reaches a runner; its
// num_tokens never exceeds Batcher::Options::max_batch_tokens, except for a
// batch made of one oversize request (see Options::run_oversize_alone).
struct Batch {
  std::vector<std::unique_ptr<Request>> requests;
  int64_t num_tokens = 0;  // Sum of the requests' num_tokens.
  // Sum of the requests' memory_bytes.
  int64_t memory_bytes = 0;
  // Held in the memory budget for this batch (its requests' bytes plus the
  // per-batch overhead) until it is done; set and released by the Batcher.
  int64_t reserved_memory_bytes = 0;
};

}  // namespace favor::batching

#endif  // FAVOR_SERVER_BATCHING_BATCH_H_
