// Collects the windows of one TRUNCATION_CHUNK input, each its own
// batching::Request (so that windows batch like any short input), and hands
// the call's EmbedGather one result from the windows' raw pooled
// embeddings: their average, each weighted by its token count (mean, cls,
// attention pooling), their per-feature maximum (max pooling), or the last
// window's (last-token pooling). The call's normalisation and dimensions
// are applied after (EmbedGather), to the result.
//
// Thread-safe: windows are answered on whichever threads complete them.
#ifndef FAVOR_SERVER_SERVICE_CHUNK_GATHER_H_
#define FAVOR_SERVER_SERVICE_CHUNK_GATHER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/service/embed_gather.h"
#include "server/model/model_config.h"
#include "server/service/embed_runner.h"

namespace favor::service {

class ChunkGather {
 public:
  // Input `index` of `gather`'s call, cut into windows of `window_tokens`
  // tokens each (at least one window).
  ChunkGather(std::shared_ptr<EmbedGather> gather, int index,
              std::vector<int64_t> window_tokens,
              model::Pooling pooling = model::Pooling::kMean);

  // Window `window` was answered with `status` (on OK, its pooled
  // embedding is in `work`). The input is answered once every window is
  // accounted for, by WindowDone or Release; the first failure wins.
  void WindowDone(int window, const EmbedWork& work,
                  const absl::Status& status);

  // `count` windows will never be answered (never enqueued); 0 does
  // nothing.
  void Release(int count);

 private:
  // Folds window `window`'s pooled embedding into weighted_sum_.
  void Combine(int window, const std::vector<float>& pooled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<EmbedGather> gather_;
  const int index_;
  const std::vector<int64_t> window_tokens_;
  const model::Pooling pooling_;
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int remaining_ ABSL_GUARDED_BY(mu_);
  // Σ tokens_w × pooled_w in double; max pooling: max_w pooled_w;
  // last-token pooling: the last window's.
  std::vector<double> weighted_sum_ ABSL_GUARDED_BY(mu_);
  absl::Duration queue_time_ ABSL_GUARDED_BY(mu_);
  absl::Duration compute_time_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_CHUNK_GATHER_H_
