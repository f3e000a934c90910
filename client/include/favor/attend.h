// The Attend call's plain types: one multi-head attention on raw Q, K, V
// tensors with any of the server's kernels (favor.v1.AttendRequest /
// AttendResponse, whose comments are the reference for each field).
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_ATTEND_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_ATTEND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "favor/call_options.h"
#include "favor/tensor.h"

namespace favor {

// How the random projection's rows are drawn.
enum class RandomFeatures {
  // Blocks of head_dim orthogonal rows (Performer's default).
  kOrthogonal = 1,
  // Independent N(0, I) rows.
  kIid = 2,
  // Blocks of head_dim rows forming a randomly rotated regular simplex
  // (lowest variance of the three).
  kSimplex = 3,
};

// Norms of the rows of orthogonal blocks.
enum class RowNorm {
  // χ(head_dim)-distributed, so that each row is marginally N(0, I).
  kChi = 1,
  // Every row exactly √head_dim long.
  kSqrtDim = 2,
};

// One Attend call. Q, K and V share one dtype and batch, heads and head_dim.
struct AttendRequest {
  // Queries, shape (batch, heads, query_length, head_dim).
  Tensor query;
  // Keys, shape (batch, heads, key_length, head_dim).
  Tensor key;
  // Values, shape (batch, heads, key_length, value_dim).
  Tensor value;
  // "softmax", "favor+", "favor++", "hyperbolic", "trig", "relu", "elu+1",
  // "exp"; empty means "favor+".
  std::string kernel;
  // m, rows of the random projection, for kernels that use one; 0 means 256
  // (or the first dimension of projection_matrix).
  int64_t num_random_features = 0;
  RandomFeatures random_features = RandomFeatures::kOrthogonal;
  RowNorm row_norm = RowNorm::kChi;
  // Where the projection comes from: the matrix when set, else this seed.
  uint64_t projection_seed = 0;
  // W, shape (num_random_features, head_dim), float32.
  std::optional<Tensor> projection_matrix;
  // Query i attends only to keys j <= i (query_length == key_length).
  bool causal = false;
  // Empty, or batch * key_length flags, row-major (batch, key); true marks a
  // padding key that no query attends to.
  std::vector<bool> key_padding_mask;
  Priority priority = Priority::kNormal;
};

// The answer to one Attend call.
struct AttendResult {
  // Shape (batch, heads, query_length, value_dim), in the query's dtype.
  Tensor output;
  // The kernel that ran.
  std::string kernel;
  // Features per query and key (φ's width); 0 for "softmax".
  int64_t num_features = 0;
  // Where the time went on the server.
  ServerTiming timing;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_ATTEND_H_
