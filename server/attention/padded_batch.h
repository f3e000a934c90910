// The batched schedule of packed attention (AttentionOptions::cpu_schedule;
// always off the CPU): the sequences of a packed batch become a few head
// groups instead of one per sequence, so that a batch of many short
// sequences costs about the LibTorch calls of one.
//
// Self-attention batches (query offsets equal to key offsets) are sorted
// by length and cut into buckets; each bucket is gathered into one group of
// (sequences × heads) rows padded to its longest sequence, with a keep mask
// per row (head_group.h). A bucket grows while its padded size is at most
// twice its tokens, or at most kSmallBucketTokens (short sequences are
// launch-bound, not compute-bound), and never past kMaxBucketTokens: a
// chunk of a bucket of short sequences spans all of them, so its features
// cost padded tokens × heads × features floats (256 MiB at 4 heads and 256
// features), where one sequence at a time cost a chunk's. A bucket of one sequence, and every
// sequence of a batch whose query and key offsets differ, is a group of
// views as before: nothing is copied. Implementation detail of server/attention.
#ifndef FAVOR_SERVER_ATTENTION_PADDED_BATCH_H_
#define FAVOR_SERVER_ATTENTION_PADDED_BATCH_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "server/attention/head_group.h"

namespace favor::attention {

class PaddedBatch {
 public:
  static constexpr int64_t kSmallBucketTokens = 8192;
  static constexpr int64_t kMaxBucketTokens = 65536;

  // query, key, value: (T, H, ·) packed as AttendPacked takes them; out:
  // (Tq, H, dv), which WriteBack fills for the padded groups (the others
  // write into it directly).
  PaddedBatch(const at::Tensor& query, const at::Tensor& key,
              const at::Tensor& value, absl::Span<const int64_t> query_offsets,
              absl::Span<const int64_t> key_offsets, const at::Tensor& out);

  const std::vector<HeadGroup>& groups() const { return groups_; }

  // Copies every padded group's rows of real tokens into `out`.
  void WriteBack() const;

 private:
  struct Bucket {
    at::Tensor out;          // (n·H, L, dv): the padded group's output
    at::Tensor valid_rows;   // rows of out viewed as (n·L, H, dv) to keep
    at::Tensor token_index;  // where they go in `out` (T, H, dv)
  };
  void AddBucket(const at::Tensor& query, const at::Tensor& key,
                 const at::Tensor& value, absl::Span<const int64_t> offsets,
                 const std::vector<int64_t>& sequences);

  at::Tensor out_;
  std::vector<HeadGroup> groups_;
  std::vector<Bucket> buckets_;
};

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_PADDED_BATCH_H_
