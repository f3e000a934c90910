// Fused element-wise loops for the CPU hot path of the feature maps. Plain
// float arrays, row-major, no LibTorch: compiled for several x86 levels and
// picked at load time (GCC target_clones), so one binary is fast on AVX-512
// and still runs on baseline x86-64.
//
// Implementation detail of server/attention: not for other modules.
#ifndef FAVOR_SERVER_ATTENTION_CPU_KERNELS_H_
#define FAVOR_SERVER_ATTENTION_CPU_KERNELS_H_

#include <cstdint>

namespace favor::attention::cpu {

// y[i] = exp(x[i]) for x ≤ 88, with relative error below 4e-7; x below −87.3
// gives 0 (exact softmax feeds it −∞ for masked scores).
void Exp(const float* x, float* y, int64_t n);

// h[i] = scale · Σ_c x[i, c]² over `rows` rows of `cols` floats, row stride
// `stride` (for the ‖x'‖²/2 term of the positive feature maps).
void RowSquaredNorms(const float* x, int64_t rows, int64_t cols, int64_t stride,
                     float scale, float* h);
// The same for rows of bfloat16 (their raw bits), widened exactly as they
// are read.
void RowSquaredNormsBF16(const uint16_t* x, int64_t rows, int64_t cols,
                         int64_t stride, float scale, float* h);

// FAVOR++'s map of each row of logits, u[i, c] ↦ scale·u[i, c] + bias[c]
// (LogitMap in features.h); a null bias is the identity (FAVOR+).
struct LogitAffine {
  float scale = 1.0f;
  const float* bias = nullptr;
};

// Key features of FAVOR+ (and FAVOR++, after `logits`) in place with a
// running shift, plus their column sums added to `column_sums` (cols
// floats), in one pass: u[i, c] = exp(u[i, c] − h[i] − *shift), 0 in rows
// with keep[i] == 0. The shift is raised to a row's max when that max
// exceeds it by more than kMaxShiftGap (so nothing overflows), rescaling
// column_sums and the rows already done. Returns the max of the (mapped) u
// over kept rows, or `empty` when none is kept.
constexpr float kMaxShiftGap = 64.0f;
float ExpWithRunningShift(float* u, const float* h, const uint8_t* keep,
                          float* shift, int64_t rows, int64_t cols,
                          float* column_sums, float empty,
                          LogitAffine logits = {});

// Query features of FAVOR+ (and FAVOR++, after `logits`) in place, each row
// shifted by its own max, as in the reference implementation: u[i, c] =
// exp(u[i, c] − h[i] − max_c' u[i, c']) + epsilon; and, in the same pass,
// dot[i] = Σ_c u[i, c]·z[c] (the normaliser φ(q)ᵀ Σφ(k)).
void QueryFeaturesWithDot(float* u, const float* h, int64_t rows, int64_t cols,
                          float epsilon, const float* z, float* dot,
                          LogitAffine logits = {});

// sums[c] += Σ x[i, c] over rows i with keep[i] (all rows when keep is
// null), and sums[cols] += the number of such rows; x has row stride
// `stride`.
void AddKeptRows(const float* x, int64_t rows, int64_t cols, int64_t stride,
                 const uint8_t* keep, float* sums);
// The same for rows of bfloat16 (their raw bits), summed down the rows
// first and then added to sums (an order of its own).
void AddKeptRowsBF16(const uint16_t* x, int64_t rows, int64_t cols,
                     int64_t stride, const uint8_t* keep, float* sums);

// sums[c] += Σ x[i, c], *sum_squared_norms += Σ ‖x[i]‖² and *count += the
// number of rows, over rows i with keep[i] (all rows when keep is null), in
// double (FAVOR++'s statistics); x has row stride `stride`.
void AddKeptMoments(const float* x, int64_t rows, int64_t cols, int64_t stride,
                    const uint8_t* keep, double* sums,
                    double* sum_squared_norms, int64_t* count);

// out[i, c] = num[i, c] / den[i] (num contiguous rows × cols), 0 where den[i]
// is 0; `out` has row stride `out_stride`.
void DivideRows(const float* num, const float* den, int64_t rows, int64_t cols,
                float* out, int64_t out_stride);

// One block of exact softmax's online update, its scores laid out keys ×
// queries (`rows` keys of `cols` queries, contiguous; −∞ where a key is
// masked for a query). Per query c: the running maximum column_max[c] is
// raised to the block's, each score becomes exp(score − shift[c]) in place
// (shift: the maximum, or 0 while it is −∞, so masked scores give 0), the
// running sum column_sum[c] is multiplied by correction[c] =
// exp(old maximum − shift) and the block's scores added to it.
// `correction` (cols floats, written) is what the caller scales its
// running outputs by; `shift` is cols floats of scratch.
void SoftmaxColumnsStep(float* scores, int64_t rows, int64_t cols,
                        float* column_max, float* column_sum,
                        float* correction, float* shift);

}  // namespace favor::attention::cpu

#endif  // FAVOR_SERVER_ATTENTION_CPU_KERNELS_H_
