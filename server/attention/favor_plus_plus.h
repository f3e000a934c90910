// FAVOR++'s coefficient A, chosen per sequence and head from the data
// (Likhosherstov et al., "Chefs' Random Tables: Non-Trigonometric Random
// Features", NeurIPS 2022, the optimal positive random features).
// Implementation detail of server/attention (feature_map.h has the public
// FavorPlusPlusCoefficient).
//
// For ω ~ N(0, I_d), φ(x) = D exp(A‖ω‖² + B ωᵀx' − ‖x'‖²/2) with B = √(1 −
// 4A), D = (1 − 4A)^(d/4) gives E[φ(x)φ(y)] = exp(x'ᵀy') for every A < 1/4.
// The second moment, finite for A < 1/8, is
//   E[φ(x)²φ(y)²] = D⁴ (1 − 8A)^(−d/2)
//                   · exp(2(1 − 4A)/(1 − 8A) ‖x' + y'‖² − ‖x'‖² − ‖y'‖²).
// Its logarithm averaged over a sequence's (query, key) pairs is, up to
// terms free of A, d·[ln(1 − 4A) − ½ ln(1 − 8A) + 2ρ(1 − 4A)/(1 − 8A)] with
// ρ = mean‖x' + y'‖² / d = (mean‖q'‖² + mean‖k'‖² + 2 q̄'ᵀk̄') / d. Setting
// its derivative to zero gives 16A² − 2(1 − 2ρ)A − ρ = 0, whose root below
// 1/8 is
//   A* = (1 − 2ρ − √((2ρ + 1)² + 8ρ)) / 16  (≤ 0; A* = 0 when ρ = 0).
// The statistic is one O(L·d) pass over the sequence's queries and kept keys.
#ifndef FAVOR_SERVER_ATTENTION_FAVOR_PLUS_PLUS_H_
#define FAVOR_SERVER_ATTENTION_FAVOR_PLUS_PLUS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "server/attention/features.h"
#include "server/attention/head_group.h"

namespace favor::attention {

// Sums over the kept rows of one head group's tokens, per head, in double.
struct RowMoments {
  at::Tensor sum_squared_norms;  // (G) Σ‖x‖²
  at::Tensor sums;               // (G, d) Σx
  at::Tensor count;  // () or, with a keep per row, (G): the rows summed
};

// The moments of x (G, L, d) over the rows where keep (L or (G, L), bool;
// undefined: all) is true, `chunk_tokens` rows at a time (never an L-sized temporary).
RowMoments MomentsOf(const at::Tensor& x, const at::Tensor& keep,
                     int64_t chunk_tokens);

// A* (G, double) from the moments of the queries and keys (ρ from x' =
// d^-1/4 x); 0 where either side has no row.
at::Tensor OptimalA(const RowMoments& queries, const RowMoments& keys,
                    int64_t head_dim);

// Sets every group's `logits` from its own queries and kept keys (queries
// at masked positions are left out too when the group has as many queries
// as keys: a padded batch pads both), one task per group. On the CPU fast
// path's groups (one head, float32) the pass is a raw loop.
void SetFavorPlusPlusLogits(const FeatureContext& context, int64_t chunk_tokens,
                            std::vector<HeadGroup>& groups, bool parallel);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_FAVOR_PLUS_PLUS_H_
