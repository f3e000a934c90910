#include "server/attention/padded_batch.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

namespace favor::attention {
namespace {

int64_t LengthOf(absl::Span<const int64_t> offsets, int64_t s) {
  return offsets[s + 1] - offsets[s];
}

// `sequences` sorted by length and cut into buckets (padded_batch.h).
std::vector<std::vector<int64_t>> Buckets(std::vector<int64_t> sequences,
                                          absl::Span<const int64_t> offsets) {
  std::stable_sort(sequences.begin(), sequences.end(),
                   [&](int64_t a, int64_t b) {
                     return LengthOf(offsets, a) < LengthOf(offsets, b);
                   });
  std::vector<std::vector<int64_t>> buckets;
  int64_t tokens = 0;  // of the last bucket
  for (const int64_t s : sequences) {
    const int64_t length = LengthOf(offsets, s);  // the bucket's longest
    if (!buckets.empty()) {
      const int64_t padded =
          static_cast<int64_t>(buckets.back().size() + 1) * length;
      if (padded <= PaddedBatch::kMaxBucketTokens &&
          padded <= std::max(2 * (tokens + length),
                             PaddedBatch::kSmallBucketTokens)) {
        buckets.back().push_back(s);
        tokens += length;
        continue;
      }
    }
    buckets.push_back({s});
    tokens = length;
  }
  return buckets;
}

// Sequence s's heads as views: (H, L, ·).
HeadGroup SequenceGroup(const at::Tensor& query, const at::Tensor& key,
                        const at::Tensor& value, const at::Tensor& out,
                        absl::Span<const int64_t> query_offsets,
                        absl::Span<const int64_t> key_offsets, int64_t s) {
  const int64_t q0 = query_offsets[s], lq = LengthOf(query_offsets, s);
  const int64_t k0 = key_offsets[s], lk = LengthOf(key_offsets, s);
  return {query.narrow(0, q0, lq).transpose(0, 1),
          key.narrow(0, k0, lk).transpose(0, 1),
          value.narrow(0, k0, lk).transpose(0, 1),
          at::Tensor(),
          out.narrow(0, q0, lq).transpose(0, 1),
          {}};
}

}  // namespace

PaddedBatch::PaddedBatch(const at::Tensor& query, const at::Tensor& key,
                         const at::Tensor& value,
                         absl::Span<const int64_t> query_offsets,
                         absl::Span<const int64_t> key_offsets,
                         const at::Tensor& out)
    : out_(out) {
  const int64_t num_sequences = static_cast<int64_t>(query_offsets.size()) - 1;
  std::vector<int64_t> self_attention;
  for (int64_t s = 0; s < num_sequences; ++s) {
    if (query_offsets == key_offsets && LengthOf(query_offsets, s) > 0) {
      self_attention.push_back(s);
    } else {
      groups_.push_back(SequenceGroup(query, key, value, out, query_offsets,
                                      key_offsets, s));
    }
  }
  for (const std::vector<int64_t>& bucket :
       Buckets(self_attention, query_offsets)) {
    if (bucket.size() == 1) {
      groups_.push_back(SequenceGroup(query, key, value, out, query_offsets,
                                      key_offsets, bucket.front()));
    } else {
      AddBucket(query, key, value, query_offsets, bucket);
    }
  }
}

void PaddedBatch::AddBucket(const at::Tensor& query, const at::Tensor& key,
                            const at::Tensor& value,
                            absl::Span<const int64_t> offsets,
                            const std::vector<int64_t>& sequences) {
  const int64_t n = static_cast<int64_t>(sequences.size());
  const int64_t heads = query.size(1);
  int64_t length = 0, tokens = 0;
  for (const int64_t s : sequences) {
    length = std::max(length, LengthOf(offsets, s));
    tokens += LengthOf(offsets, s);
  }
  // Every index the bucket needs, made on the host and copied to the device
  // at once: [rows to gather (n·L) | rows to keep (tokens) | where they go
  // (tokens)], and the keep mask of its n·H rows. A padding row repeats its
  // sequence's last token (finite, and masked out).
  at::Tensor host = at::empty({n * length + 2 * tokens}, at::kLong);
  at::Tensor host_keep = at::empty({n * heads, length}, at::kBool);
  int64_t* gather = host.data_ptr<int64_t>();
  int64_t* valid = gather + n * length;
  int64_t* index = valid + tokens;
  bool* keep_rows = host_keep.data_ptr<bool>();
  for (int64_t i = 0, t = 0; i < n; ++i) {
    const int64_t begin = offsets[sequences[i]];
    const int64_t size = LengthOf(offsets, sequences[i]);
    for (int64_t j = 0; j < length; ++j) {
      gather[i * length + j] = begin + std::min(j, size - 1);
    }
    for (int64_t j = 0; j < size; ++j, ++t) {
      valid[t] = i * length + j;
      index[t] = begin + j;
    }
    for (int64_t h = 0; h < heads; ++h) {
      bool* row = keep_rows + (i * heads + h) * length;
      std::fill(row, row + size, true);
      std::fill(row + size, row + length, false);
    }
  }
  const at::Tensor indices = host.to(query.device());
  const at::Tensor keep = host_keep.to(query.device());
  const at::Tensor rows = indices.narrow(0, 0, n * length);
  // (T, H, c) → (n·H, L, c)
  const auto padded = [&](const at::Tensor& x) {
    return x.index_select(0, rows)
        .view({n, length, heads, x.size(2)})
        .transpose(1, 2)
        .reshape({n * heads, length, x.size(2)});
  };
  Bucket bucket{
      at::empty({n * heads, length, value.size(2)}, out_.options()),
      indices.narrow(0, n * length, tokens),
      indices.narrow(0, n * length + tokens, tokens)};
  groups_.push_back({padded(query), padded(key), padded(value), keep,
                     bucket.out, {}});
  buckets_.push_back(std::move(bucket));
}

void PaddedBatch::WriteBack() const {
  const int64_t heads = out_.size(1), dv = out_.size(2);
  for (const Bucket& bucket : buckets_) {
    const int64_t n = bucket.out.size(0) / heads;
    const int64_t length = bucket.out.size(1);
    out_.index_copy_(0, bucket.token_index,
                     bucket.out.view({n, heads, length, dv})
                         .transpose(1, 2)
                         .reshape({n * length, heads, dv})
                         .index_select(0, bucket.valid_rows));
  }
}

}  // namespace favor::attention
