// The runner of one model's Batcher: packs the batch's sequences into one
// token list plus offsets, calls Model::Embed, and writes each job's rows
// back into its work (EmbedWork). Requests in one batch may ask for
// different poolings; each distinct pooling is one Embed call (normally
// there is one), which also returns the token vectors (for token embeddings
// or late-chunking spans) from the same pass when any of its requests wants
// them. The model is asked for raw vectors: the call's
// normalisation and Matryoshka cut are applied when the answer is written
// (EmbedGather), and spans are mean-pooled here, on the batch worker, from
// the sequence's token vectors (span_pooling.h).
//
// LibTorch-free: the model's implementation catches its own exceptions and
// returns Status; anything that still escapes is caught here as INTERNAL.
#ifndef FAVOR_SERVER_SERVICE_EMBED_RUNNER_H_
#define FAVOR_SERVER_SERVICE_EMBED_RUNNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/batching/clock.h"
#include "server/batching/job.h"
#include "server/model/model.h"
#include "server/service/token_range.h"

namespace favor::service {

// The work of one batching::Job: one input of an Embed call, or one window
// of a TRUNCATION_CHUNK input.
struct EmbedWork {
  // Input, set by the service.
  std::vector<int32_t> token_ids;
  model::Pooling pooling = model::Pooling::kMean;  // kNone: no pooled vector
  bool include_token_embeddings = false;
  // Late chunking: token ranges of token_ids to mean-pool.
  std::vector<TokenRange> spans;

  // Output, set by the runner before the request completes with OK; raw:
  // neither normalised nor cut to `dimensions`.
  std::vector<float> pooled;      // embedding_dim values, or empty
  std::vector<float> token_rows;  // num_token_rows × embedding_dim
  int64_t num_token_rows = 0;
  std::vector<float> span_means;  // spans.size() × embedding_dim
  absl::Duration queue_time;      // admission to the start of its batch
  absl::Duration compute_time;    // its batch's computation
};

class EmbedRunner final : public batching::JobRunner<EmbedWork> {
 public:
  // `model` and `clock` must outlive the runner.
  EmbedRunner(const model::Model* model, batching::Clock* clock);

  absl::Status RunJobs(
      int worker_index,
      absl::Span<batching::Job<EmbedWork>* const> jobs) override;

  // Implementation details follow.
 private:
  struct Group;
  absl::Status RunGroup(const Group& group) const;

  const model::Model* const model_;
  batching::Clock* const clock_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_RUNNER_H_
