// Encoder::Forward: a batch cut into sub-batches of consecutive
// sequences, each run through every layer before the next (encoder.h).
#include <ATen/ATen.h>

#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/common/status_macros.h"
#include "server/model/encoder.h"

namespace favor::model::internal {

absl::StatusOr<PackedVectors> Encoder::Forward(
    const at::Tensor& token_ids, absl::Span<const int64_t> offsets,
    const StageObserver& observer) const {
  const int64_t limit = options_.sub_batch_tokens;
  const int64_t total = offsets.back();
  // Only self-attention blocks keep sequences apart through every layer;
  // an observer sees the whole batch's stages.
  if (limit <= 0 || observer || config_.block != BlockType::kEncoder ||
      offsets.size() <= 2 || offsets.front() != 0 || total <= limit) {
    return ForwardWhole(token_ids, offsets, observer);
  }
  // Consecutive sequences up to `limit` tokens (a longer one alone), each
  // run through every layer before the next: their activations stay in
  // the caches from one layer to the next. Rows are computed independently
  // of the rows beside them, so the vectors are the same bits either way.
  struct SubBatch {
    size_t first, last;  // sequences [first, last)
  };
  std::vector<SubBatch> sub_batches;
  for (size_t first = 0; first + 1 < offsets.size();) {
    size_t last = first + 1;
    while (last + 1 < offsets.size() &&
           offsets[last + 1] - offsets[first] <= limit) {
      ++last;
    }
    sub_batches.push_back({first, last});
    first = last;
  }
  PackedVectors out;
  out.offsets.assign(offsets.begin(), offsets.end());
  out.values = at::empty({total, config_.hidden_size},
                         weights_.word_embeddings.options());
  // Each sub-batch works in its rows of the output (the layers overwrite
  // the embeddings in place), so no copy of them exists.
  const auto run = [&](const SubBatch& sub) -> absl::Status {
    std::vector<int64_t> part(offsets.begin() + sub.first,
                              offsets.begin() + sub.last + 1);
    for (int64_t& offset : part) offset -= offsets[sub.first];
    const int64_t begin = offsets[sub.first];
    const int64_t rows = part.back();
    at::Tensor rows_out = out.values.narrow(0, begin, rows);
    ASSIGN_OR_RETURN(PackedVectors piece,
                     ForwardWhole(token_ids.narrow(0, begin, rows), part,
                                  nullptr, rows_out));
    if (!piece.values.is_same(rows_out)) rows_out.copy_(piece.values);
    return absl::OkStatus();
  };
  // A sequence longer than the limit runs alone on every thread. The
  // sub-batches of shorter ones run side by side, a thread each, with no
  // barrier between their layers, when there are enough of them for the
  // threads to finish together (kSubBatchesPerThread each); else one after
  // another on every thread.
  constexpr int64_t kSubBatchesPerThread = 4;
  std::vector<const SubBatch*> short_ones;
  for (const SubBatch& sub : sub_batches) {
    if (offsets[sub.last] - offsets[sub.first] > limit) {
      RETURN_IF_ERROR(run(sub));
    } else {
      short_ones.push_back(&sub);
    }
  }
  const int64_t threads = at::get_num_threads();
  if (!options_.parallel_blocks || threads <= 1 || at::in_parallel_region() ||
      static_cast<int64_t>(short_ones.size()) <
          kSubBatchesPerThread * threads) {
    for (const SubBatch* sub : short_ones) RETURN_IF_ERROR(run(*sub));
    return out;
  }
  absl::Mutex mutex;
  absl::Status first_error;
  ForEachClaimed(static_cast<int64_t>(short_ones.size()), [&](int64_t i) {
    absl::Status status = run(*short_ones[i]);
    if (!status.ok()) {
      absl::MutexLock lock(&mutex);
      if (first_error.ok()) first_error = std::move(status);
    }
  });
  RETURN_IF_ERROR(first_error);
  return out;
}

}  // namespace favor::model::internal
