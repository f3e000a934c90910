#include "server/service/chunk_gather.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace favor::service {

ChunkGather::ChunkGather(std::shared_ptr<EmbedGather> gather, int index,
                         std::vector<int64_t> window_tokens,
                         model::Pooling pooling)
    : gather_(std::move(gather)),
      index_(index),
      window_tokens_(std::move(window_tokens)),
      pooling_(pooling),
      remaining_(static_cast<int>(window_tokens_.size())) {}

void ChunkGather::WindowDone(int window, const EmbedWork& work,
                             const absl::Status& status) {
  bool first_failure = false;
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && status_.ok()) {
      status_ = status;
      first_failure = true;
    }
    if (status.ok() && status_.ok()) {
      Combine(window, work.pooled);
      queue_time_ = std::max(queue_time_, work.queue_time);
      compute_time_ = std::max(compute_time_, work.compute_time);
    }
  }
  // The input has failed: the call's work still queued is dropped now, not
  // computed for nothing before the failure is answered, and the failure
  // is the call's (not the CANCELLED of the work it drops).
  if (first_failure) gather_->Fail(status);
  Release(1);
}

void ChunkGather::Combine(int window, const std::vector<float>& pooled) {
  const bool first = weighted_sum_.empty();
  weighted_sum_.resize(pooled.size(), 0.0);
  const double weight = static_cast<double>(window_tokens_[window]);
  for (size_t c = 0; c < pooled.size(); ++c) {
    switch (pooling_) {
      case model::Pooling::kMax:
        weighted_sum_[c] =
            first ? pooled[c] : std::max<double>(weighted_sum_[c], pooled[c]);
        break;
      case model::Pooling::kLastToken:
        if (window + 1 == static_cast<int>(window_tokens_.size())) {
          weighted_sum_[c] = pooled[c];
        }
        break;
      default:
        weighted_sum_[c] += weight * pooled[c];
    }
  }
}

void ChunkGather::Release(int count) {
  if (count == 0) return;  // as EmbedGather::Release
  EmbedWork combined;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    remaining_ -= count;
    if (remaining_ > 0) return;
    status = status_;
    // Only the weighted sum is divided.
    const bool averaged = pooling_ != model::Pooling::kMax &&
                          pooling_ != model::Pooling::kLastToken;
    const double tokens =
        averaged ? static_cast<double>(std::accumulate(
                       window_tokens_.begin(), window_tokens_.end(), int64_t{0}))
                 : 1.0;
    combined.pooled.reserve(weighted_sum_.size());
    for (const double sum : weighted_sum_) {
      combined.pooled.push_back(static_cast<float>(sum / tokens));
    }
    combined.queue_time = queue_time_;
    combined.compute_time = compute_time_;
  }
  gather_->InputDone(index_, combined, status);
}

}  // namespace favor::service
