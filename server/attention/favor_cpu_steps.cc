#include "server/attention/favor_cpu_steps.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "server/attention/cpu_kernels.h"

namespace favor::attention::favor_cpu {
namespace {

void* ScratchBytes(ScratchSlot slot, int64_t elements, at::ScalarType type) {
  // Tensors for LibTorch's allocator's 64-byte alignment: rows that start
  // mid-cache-line would slow every vector load of cpu::Gemm.
  thread_local at::Tensor buffers[static_cast<int>(ScratchSlot::kCount)];
  at::Tensor& buffer = buffers[static_cast<int>(slot)];
  if (!buffer.defined() || buffer.numel() < elements ||
      buffer.scalar_type() != type) {
    buffer = at::empty({elements}, type);
  }
  return buffer.data_ptr();
}

}  // namespace

float* Scratch(ScratchSlot slot, int64_t rows, int64_t cols) {
  return static_cast<float*>(ScratchBytes(slot, rows * cols, at::kFloat));
}
cpu::BFloat16Bits* ScratchBF16(ScratchSlot slot, int64_t elements) {
  return static_cast<cpu::BFloat16Bits*>(
      ScratchBytes(slot, elements, at::kBFloat16));
}

bool ProductsOnGemm() {
  return cpu::ActiveGemmKernel() == cpu::GemmKernel::kAvx512;
}

bool ProductsOnPackedAvx2() {
  return cpu::ActiveGemmKernel() == cpu::GemmKernel::kAvx2;
}

const float* PackedForAvx2(ScratchSlot slot, int64_t depth, int64_t cols,
                           const float* b, int64_t ldb) {
  constexpr cpu::GemmKernel kKernel = cpu::GemmKernel::kAvx2;
  float* packed = static_cast<float*>(
      ScratchBytes(slot, cpu::PackedBSize(depth, cols, kKernel), at::kFloat));
  cpu::PackB(depth, cols, b, ldb, kKernel, packed);
  return packed;
}

void PackedProduct(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
                   const float* packed, float* c, int64_t ldc,
                   bool accumulate) {
  cpu::GemmPackedB(rows, cols, depth, a, packed, cpu::GemmKernel::kAvx2, c, ldc,
                   accumulate);
}

void MatMul(int64_t rows, int64_t cols, int64_t depth, cpu::MatrixView a,
            const float* b, int64_t ldb, float* c, int64_t ldc,
            bool accumulate) {
  if (ProductsOnGemm()) {
    cpu::Gemm(rows, cols, depth, a, b, ldb, c, ldc, accumulate);
    return;
  }
  const auto wrap = [](const float* data, int64_t r, int64_t cs, int64_t rs,
                       int64_t col_stride) {
    return at::from_blob(const_cast<float*>(data), {r, cs}, {rs, col_stride},
                         at::kFloat);
  };
  const at::Tensor a_t =
      wrap(a.data, rows, depth, a.row_stride, a.column_stride);
  const at::Tensor b_t = wrap(b, depth, cols, ldb, 1);
  at::Tensor c_t = wrap(c, rows, cols, ldc, 1);
  if (accumulate) {
    c_t.addmm_(a_t, b_t);
  } else {
    at::mm_out(c_t, a_t, b_t);
  }
}

cpu::MatrixView KeptValues(const float* values, int64_t stride, int64_t rows,
                           int64_t dv, const uint8_t* keep, float* scratch,
                           float* value_sums) {
  cpu::MatrixView v{values, stride, 1};
  if (keep != nullptr) {
    for (int64_t i = 0; i < rows; ++i) {
      if (keep[i]) {
        std::copy(values + i * stride, values + i * stride + dv,
                  scratch + i * dv);
      } else {
        std::fill(scratch + i * dv, scratch + (i + 1) * dv, 0.0f);
      }
    }
    v = {scratch, dv, 1};
  }
  cpu::AddKeptRows(v.data, rows, dv, v.row_stride, keep, value_sums);
  return v;
}

const cpu::BFloat16Bits* KeptValueBits(const cpu::BFloat16Bits* values,
                                       int64_t stride, int64_t rows, int64_t dv,
                                       const uint8_t* keep,
                                       cpu::BFloat16Bits* scratch,
                                       int64_t* kept_stride) {
  *kept_stride = stride;
  if (keep == nullptr) return values;
  for (int64_t i = 0; i < rows; ++i) {
    const cpu::BFloat16Bits* row = values + i * stride;
    if (keep[i]) {
      std::copy(row, row + dv, scratch + i * dv);
    } else {
      std::fill(scratch + i * dv, scratch + (i + 1) * dv, 0);
    }
  }
  *kept_stride = dv;
  return scratch;
}

}  // namespace favor::attention::favor_cpu
