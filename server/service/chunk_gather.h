// Collects the windows of one TRUNCATION_CHUNK input, each its own
// batching::Request (so that windows batch like any short input), and hands
// the call's EmbedGather one result: the windows' raw pooled embeddings
// averaged, each weighted by its token count. The call's normalisation and
// dimensions are applied after (EmbedGather), to the average.
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
#include "server/service/embed_runner.h"

namespace favor::service {

class ChunkGather {
 public:
  // Input `index` of `gather`'s call, cut into windows of `window_tokens`
  // tokens each (at least one window).
  ChunkGather(std::shared_ptr<EmbedGather> gather, int index,
              std::vector<int64_t> window_tokens);

  // Window `window` was answered with `status` (on OK, its pooled
  // embedding is in `work`). The input is answered once every window is
  // accounted for, by WindowDone or Release; the first failure wins.
  void WindowDone(int window, const EmbedWork& work,
                  const absl::Status& status);

  // `count` windows will never be answered (never enqueued); 0 does
  // nothing.
  void Release(int count);

 private:
  const std::shared_ptr<EmbedGather> gather_;
  const int index_;
  const std::vector<int64_t> window_tokens_;
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int remaining_ ABSL_GUARDED_BY(mu_);
  // Σ tokens_w × pooled_w, in double.
  std::vector<double> weighted_sum_ ABSL_GUARDED_BY(mu_);
  absl::Duration queue_time_ ABSL_GUARDED_BY(mu_);
  absl::Duration compute_time_ ABSL_GUARDED_BY(mu_);
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_CHUNK_GATHER_H_
