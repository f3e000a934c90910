// The masks of keys that take part (HeadGroup::keep): (L) shared by every
// row of a group, or (G, L) one per row. Implementation detail of
// server/attention.
#ifndef FAVOR_SERVER_ATTENTION_KEEP_MASK_H_
#define FAVOR_SERVER_ATTENTION_KEEP_MASK_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace favor::attention {

// keep's columns [begin, end).
inline at::Tensor KeepColumns(const at::Tensor& keep, int64_t begin,
                              int64_t end) {
  return keep.narrow(-1, begin, end - begin);
}

// Where keep is false, as a mask of rows of a (G, L, ·) tensor: (L, 1) or
// (G, L, 1).
inline at::Tensor DroppedRows(const at::Tensor& keep) {
  return keep.logical_not().unsqueeze(-1);
}

// Where keep is false, as a mask of key columns of (G, Lq, Lk) scores:
// (1, Lk) or (G, 1, Lk).
inline at::Tensor DroppedColumns(const at::Tensor& keep) {
  return keep.logical_not().unsqueeze(-2);
}

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_KEEP_MASK_H_
