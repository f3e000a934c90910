#include "server/attention/attention.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/attention/exact_attention.h"
#include "server/attention/features.h"
#include "server/attention/head_group.h"
#include "server/attention/linear_attention.h"
#include "server/attention/padded_batch.h"
#include "server/attention/torch_status.h"
#include "server/common/status_macros.h"

namespace favor::attention {
namespace {

std::string Shape(const at::Tensor& t) { return c10::str(t.sizes()); }

absl::Status CheckTensor(const at::Tensor& t, const char* name, int64_t dim,
                         const char* layout) {
  if (!t.defined()) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is missing"));
  }
  if (t.dim() != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must have shape ", layout, ", got ", Shape(t)));
  }
  const at::ScalarType type = t.scalar_type();
  if (type != at::kFloat && type != at::kHalf && type != at::kBFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be float32, float16 or bfloat16, got ",
                     c10::toString(type)));
  }
  return absl::OkStatus();
}

absl::Status CheckAlike(const at::Tensor& q, const at::Tensor& k,
                        const at::Tensor& v) {
  if (k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query, key and value must share a dtype, got ",
        c10::toString(q.scalar_type()), ", ", c10::toString(k.scalar_type()),
        " and ", c10::toString(v.scalar_type())));
  }
  if (k.device() != q.device() || v.device() != q.device()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query, key and value must be on one device, got ", q.device().str(),
        ", ", k.device().str(), " and ", v.device().str()));
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const AttentionOptions& options) {
  if (options.chunk_tokens < 1 || options.causal_chunk_tokens < 1 ||
      options.gpu_chunk_tokens < 1 || options.gpu_causal_chunk_tokens < 1 ||
      options.exact_query_tile < 1 || options.exact_key_tile < 1) {
    return absl::InvalidArgumentError(
        "chunk and tile sizes in AttentionOptions must be at least 1");
  }
  if (options.window_radius < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "window_radius must be -1 (none) or at least 0, got ",
        options.window_radius));
  }
  if (options.window_radius >= 0 && options.kernel != Kernel::kSoftmaxExact) {
    return absl::InvalidArgumentError(
        "sliding-window attention (window_radius) runs with the exact "
        "softmax kernel only");
  }
  return absl::OkStatus();
}

absl::Status CheckDense(const at::Tensor& q, const at::Tensor& k,
                        const at::Tensor& v, const at::Tensor& mask,
                        const AttentionOptions& options) {
  RETURN_IF_ERROR(CheckTensor(q, "query", 4, "(batch, heads, length, dim)"));
  RETURN_IF_ERROR(CheckTensor(k, "key", 4, "(batch, heads, length, dim)"));
  RETURN_IF_ERROR(CheckTensor(v, "value", 4, "(batch, heads, length, dim)"));
  RETURN_IF_ERROR(CheckAlike(q, k, v));
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) ||
      k.size(1) != q.size(1) || v.size(1) != q.size(1) ||
      k.size(3) != q.size(3) || v.size(2) != k.size(2) || q.size(3) < 1 ||
      v.size(3) < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query (B, H, Lq, d), key (B, H, Lk, d) and value (B, H, Lk, dv) "
        "disagree (d, dv >= 1): got ",
        Shape(q), ", ", Shape(k), " and ", Shape(v)));
  }
  if (mask.defined() &&
      (mask.scalar_type() != at::kBool || mask.dim() != 2 ||
       mask.size(0) != k.size(0) || mask.size(1) != k.size(2) ||
       mask.device() != k.device())) {
    return absl::InvalidArgumentError(
        absl::StrCat("key_padding_mask must be bool (batch, key length) = (",
                     k.size(0), ", ", k.size(2), ") on ", k.device().str(),
                     ", got ", c10::toString(mask.scalar_type()), " ",
                     Shape(mask), " on ", mask.device().str()));
  }
  if (options.causal && q.size(2) != k.size(2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("causal attention needs as many queries as keys, got ",
                     q.size(2), " and ", k.size(2)));
  }
  return CheckOptions(options);
}

absl::Status CheckOffsets(absl::Span<const int64_t> offsets, int64_t tokens,
                          const char* name) {
  if (offsets.empty() || offsets.front() != 0 || offsets.back() != tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must start at 0 and end at the token count ", tokens));
  }
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must not decrease, but entry ", i, " is ",
                       offsets[i], " after ", offsets[i - 1]));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPacked(const at::Tensor& q, const at::Tensor& k,
                         const at::Tensor& v,
                         absl::Span<const int64_t> q_offsets,
                         absl::Span<const int64_t> k_offsets,
                         const AttentionOptions& options) {
  RETURN_IF_ERROR(CheckTensor(q, "query", 3, "(tokens, heads, dim)"));
  RETURN_IF_ERROR(CheckTensor(k, "key", 3, "(tokens, heads, dim)"));
  RETURN_IF_ERROR(CheckTensor(v, "value", 3, "(tokens, heads, dim)"));
  RETURN_IF_ERROR(CheckAlike(q, k, v));
  if (k.size(1) != q.size(1) || v.size(1) != q.size(1) ||
      k.size(2) != q.size(2) || v.size(0) != k.size(0) || q.size(2) < 1 ||
      v.size(2) < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query (Tq, H, d), key (Tk, H, d) and value (Tk, H, dv) disagree "
        "(d, dv >= 1): got ",
        Shape(q), ", ", Shape(k), " and ", Shape(v)));
  }
  if (q_offsets.size() != k_offsets.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "query_offsets and key_offsets must list the same sequences, got ",
        q_offsets.size(), " and ", k_offsets.size(), " entries"));
  }
  RETURN_IF_ERROR(CheckOffsets(q_offsets, q.size(0), "query_offsets"));
  RETURN_IF_ERROR(CheckOffsets(k_offsets, k.size(0), "key_offsets"));
  if (options.causal && q_offsets != k_offsets) {
    return absl::InvalidArgumentError(
        "causal attention needs query_offsets equal to key_offsets");
  }
  return CheckOptions(options);
}

// Off the CPU, or when asked to on it, sequences run batched
// (AttentionOptions::cpu_schedule), in order on the calling thread.
bool Batched(const at::Tensor& query, const AttentionOptions& options) {
  return !query.device().is_cpu() ||
         options.cpu_schedule == AttentionOptions::CpuSchedule::kBatched;
}

// Splits (H, L, ·) views of one sequence into groups of one head, each a
// task for a CPU thread.
void AddHeads(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
              const at::Tensor& keep, const at::Tensor& out,
              std::vector<HeadGroup>& groups) {
  for (int64_t h = 0; h < q.size(0); ++h) {
    groups.push_back({q.narrow(0, h, 1),
                      k.narrow(0, h, 1),
                      v.narrow(0, h, 1),
                      keep,
                      out.narrow(0, h, 1),
                      {}});
  }
}

absl::Status Run(const at::Tensor& projection, int64_t head_dim,
                 c10::Device device, const AttentionOptions& options_in,
                 const std::vector<HeadGroup>& groups, bool parallel,
                 const FeatureContext* prepared = nullptr) {
  const AttentionOptions options = OnDevice(options_in, device);
  if (options.kernel == Kernel::kSoftmaxExact) {
    RunExactAttention(options, groups, parallel);
    return absl::OkStatus();
  }
  if (prepared != nullptr) {
    RunLinearAttention(*prepared, options, groups, parallel);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const FeatureContext context,
                   FeatureContext::Create(options.kernel, projection, head_dim,
                                          device, options.feature_epsilon));
  RunLinearAttention(context, options, groups, parallel);
  return absl::OkStatus();
}

// Whether `prepared` was made for this call's kernel, ε, head size and
// device.
absl::Status CheckPrepared(const FeatureContext& prepared,
                           const AttentionOptions& options, int64_t head_dim,
                           const c10::Device& device) {
  const float epsilon =
      prepared.traits().adds_epsilon ? options.feature_epsilon : 0.0f;
  const at::Tensor& w = prepared.scaled_projection_t();
  if (prepared.kernel() != options.kernel || prepared.epsilon() != epsilon ||
      (w.defined() && (w.size(0) != head_dim || w.device() != device))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prepared projection was made for kernel '",
        KernelName(prepared.kernel()), "', epsilon ", prepared.epsilon(),
        w.defined() ? absl::StrCat(", head size ", w.size(0), " on ",
                                   w.device().str())
                    : std::string(),
        "; this call has kernel '", KernelName(options.kernel), "', epsilon ",
        epsilon, ", head size ", head_dim, " on ", device.str()));
  }
  return absl::OkStatus();
}

// Nothing thrown by LibTorch leaves the library (torch_status.h).
using torch_status::Guarded;

}  // namespace

PreparedProjection::PreparedProjection() = default;
PreparedProjection::~PreparedProjection() = default;
PreparedProjection::PreparedProjection(const PreparedProjection&) = default;
PreparedProjection& PreparedProjection::operator=(const PreparedProjection&) =
    default;

absl::StatusOr<PreparedProjection> PreparedProjection::Create(
    const at::Tensor& projection, int64_t head_dim, const c10::Device& device,
    const AttentionOptions& options) {
  PreparedProjection prepared;
  if (options.kernel == Kernel::kSoftmaxExact) return prepared;
  return Guarded("preparing the projection",
                 [&]() -> absl::StatusOr<PreparedProjection> {
                   ASSIGN_OR_RETURN(
                       FeatureContext context,
                       FeatureContext::Create(options.kernel, projection,
                                              head_dim, device,
                                              options.feature_epsilon));
                   prepared.context_ = std::make_shared<const FeatureContext>(
                       std::move(context));
                   return prepared;
                 });
}

AttentionOptions OnDevice(const AttentionOptions& options,
                          const c10::Device& device) {
  if (device.is_cpu()) return options;
  AttentionOptions on_device = options;
  on_device.chunk_tokens = options.gpu_chunk_tokens;
  on_device.causal_chunk_tokens = options.gpu_causal_chunk_tokens;
  return on_device;
}

absl::StatusOr<at::Tensor> Attend(const at::Tensor& query,
                                  const at::Tensor& key,
                                  const at::Tensor& value,
                                  const at::Tensor& projection,
                                  const at::Tensor& key_padding_mask,
                                  const AttentionOptions& options) {
  RETURN_IF_ERROR(CheckDense(query, key, value, key_padding_mask, options));
  return Guarded("attention", [&]() -> absl::StatusOr<at::Tensor> {
    at::Tensor out =
        at::empty({query.size(0), query.size(1), query.size(2), value.size(3)},
                  query.options());
    const bool batched = Batched(query, options);
    std::vector<HeadGroup> groups;
    if (batched) {
      // (B, H, L, ·) as one group of B·H rows, each with its batch's keep.
      at::Tensor keep;
      if (key_padding_mask.defined()) {
        keep = key_padding_mask.logical_not()
                   .unsqueeze(1)
                   .expand({key.size(0), key.size(1), key.size(2)})
                   .reshape({-1, key.size(2)});
      }
      groups.push_back({query.flatten(0, 1), key.flatten(0, 1),
                        value.flatten(0, 1), keep, out.flatten(0, 1), {}});
    } else {
      for (int64_t b = 0; b < query.size(0); ++b) {
        at::Tensor keep;
        if (key_padding_mask.defined()) {
          keep = key_padding_mask[b].logical_not().contiguous();
        }
        AddHeads(query[b], key[b], value[b], keep, out[b], groups);
      }
    }
    RETURN_IF_ERROR(Run(projection, query.size(3), query.device(), options,
                        groups, /*parallel=*/!batched));
    return out;
  });
}

absl::StatusOr<at::Tensor> AttendPacked(const at::Tensor& query,
                                        const at::Tensor& key,
                                        const at::Tensor& value,
                                        absl::Span<const int64_t> query_offsets,
                                        absl::Span<const int64_t> key_offsets,
                                        const at::Tensor& projection,
                                        const AttentionOptions& options,
                                        const PreparedProjection* prepared) {
  RETURN_IF_ERROR(
      CheckPacked(query, key, value, query_offsets, key_offsets, options));
  const FeatureContext* context =
      prepared != nullptr && options.kernel != Kernel::kSoftmaxExact
          ? prepared->context()
          : nullptr;
  if (context != nullptr) {
    RETURN_IF_ERROR(
        CheckPrepared(*context, options, query.size(2), query.device()));
  }
  return Guarded("packed attention", [&]() -> absl::StatusOr<at::Tensor> {
    at::Tensor out = at::empty({query.size(0), query.size(1), value.size(2)},
                               query.options());
    if (Batched(query, options)) {
      const PaddedBatch batch(query, key, value, query_offsets, key_offsets,
                              out);
      RETURN_IF_ERROR(Run(projection, query.size(2), query.device(), options,
                          batch.groups(), /*parallel=*/false, context));
      batch.WriteBack();
      return out;
    }
    std::vector<HeadGroup> groups;
    for (size_t s = 0; s + 1 < query_offsets.size(); ++s) {
      const int64_t q0 = query_offsets[s], q1 = query_offsets[s + 1];
      const int64_t k0 = key_offsets[s], k1 = key_offsets[s + 1];
      AddHeads(query.narrow(0, q0, q1 - q0).transpose(0, 1),
               key.narrow(0, k0, k1 - k0).transpose(0, 1),
               value.narrow(0, k0, k1 - k0).transpose(0, 1), at::Tensor(),
               out.narrow(0, q0, q1 - q0).transpose(0, 1), groups);
    }
    RETURN_IF_ERROR(Run(projection, query.size(2), query.device(), options,
                        groups, /*parallel=*/true, context));
    return out;
  });
}

}  // namespace favor::attention
