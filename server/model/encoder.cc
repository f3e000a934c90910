#include "server/model/encoder.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "server/common/status_macros.h"

namespace favor::model::internal {
namespace {

// The fused query | key | value layer restricted to parts [first_part,
// first_part + num_parts) and one group of heads: a view when the group is
// every head, else a copy of the columns (H × 3H at most: small beside the
// long inputs that make groups).
Linear GroupColumns(const Linear& fused, int64_t hidden, int64_t head_dim,
                    int first_part, int num_parts, int64_t begin,
                    int64_t count) {
  if (count * head_dim == hidden) {
    return fused.Columns(first_part * hidden, num_parts * hidden);
  }
  std::vector<at::Tensor> weights, biases;
  for (int part = first_part; part < first_part + num_parts; ++part) {
    const Linear columns =
        fused.Columns(part * hidden + begin * head_dim, count * head_dim);
    weights.push_back(columns.weight_t);
    biases.push_back(columns.bias);
  }
  Linear group{at::cat(weights, 1), at::cat(biases, 0)};
  // int8 scales are per column: the copy quantises to the same bytes.
  if (fused.int8_weight.defined()) group.QuantizeInt8();
  return group;
}

}  // namespace

struct Encoder::Tokens {
  std::vector<int64_t> offsets;
  at::Tensor positions;  // (T) int64 on the device; undefined if unused
  RotaryAngles rotary;   // rotary models only
  RotaryAngles local_rotary;  // rotary models with local layers
};

bool Encoder::IsLocalLayer(int64_t index) const {
  return config_.local_attention_window > 0 &&
         index % config_.global_attention_every_n_layers != 0;
}

Encoder::LayerAttention Encoder::AttentionOfLayer(int64_t index,
                                                  const Tokens& tokens) const {
  const bool rotary =
      config_.position_embedding_type == PositionEmbedding::kRotary;
  const bool local = IsLocalLayer(index);
  LayerAttention how;
  if (rotary) how.rotary = local ? &tokens.local_rotary : &tokens.rotary;
  how.options = local ? &local_attention_ : &options_.attention;
  if (static_cast<size_t>(index) < prepared_projections_.size()) {
    how.projection = &prepared_projections_[index];
  }
  return how;
}

attention::AttentionOptions AttentionOptionsFor(const ModelConfig& config) {
  attention::AttentionOptions options;
  options.kernel = config.attention.kernel;
  options.causal = config.attention.causal;
  options.feature_epsilon =
      static_cast<float>(config.attention.feature_epsilon);
  return options;
}

Encoder::Encoder(ModelConfig config, EncoderWeights weights,
                 EncoderOptions options)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      options_(std::move(options)),
      local_attention_(options_.attention) {
  // A local layer: exact softmax within the window, whatever the global
  // layers' kernel.
  local_attention_.kernel = attention::Kernel::kSoftmaxExact;
  local_attention_.window_radius = config_.local_attention_window / 2;
  if (config_.position_embedding_type == PositionEmbedding::kRotary) {
    const at::Tensor first = at::arange(
        std::min<int64_t>(kRotaryTablePositions, config_.max_sequence_length),
        weights_.word_embeddings.options().dtype(at::kLong));
    rotary_positions_ =
        MakeRotaryTables(first, config_.head_dim(), config_.rotary_base);
    if (config_.local_attention_window > 0) {
      local_rotary_positions_ = MakeRotaryTables(first, config_.head_dim(),
                                                 config_.local_rotary_base);
    }
  }
  if (config_.block == BlockType::kEncoder) {
    for (size_t l = 0; l < weights_.layers.size(); ++l) {
      absl::StatusOr<attention::PreparedProjection> prepared =
          attention::PreparedProjection::Create(
              weights_.layers[l].attention.projection, config_.head_dim(),
              weights_.word_embeddings.device(),
              IsLocalLayer(static_cast<int64_t>(l)) ? local_attention_
                                                     : options_.attention);
      prepared_projections_.push_back(
          prepared.ok() ? *std::move(prepared) : attention::PreparedProjection());
    }
  }
}

at::Tensor Encoder::ToCompute(const at::Tensor& x) const {
  return x.to(weights_.word_embeddings.scalar_type());
}

at::ScalarType Encoder::AttentionDType(const at::Tensor& x) {
  // A bfloat16 model hands bfloat16 Q, K and V to the attention on the CPU:
  // the FAVOR+ and FAVOR++ path multiplies them in bfloat16 with float32
  // sums, and the other kernels widen them at their edges. CUDA and float16
  // keep float32 Q, K and V until measured on a GPU (docs/performance.md).
  return x.is_cpu() && x.scalar_type() == at::kBFloat16 ? at::kBFloat16
                                                        : at::kFloat;
}

void Encoder::ApplyNormInPlace(const Norm& norm, at::Tensor& x) const {
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    at::Tensor rows = x.narrow(0, begin, end - begin);
    rows.copy_(norm(rows.to(at::kFloat)));
  });
}

at::Tensor Encoder::Embed(const at::Tensor& token_ids, const Tokens& tokens,
                          at::Tensor x) const {
  const at::Tensor& words = weights_.word_embeddings;
  if (!x.defined()) {
    x = at::empty({token_ids.size(0), words.size(1)}, words.options());
  }
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    // The sum in float32 (a no-op conversion for float32 weights).
    at::Tensor sum =
        words.index_select(0, token_ids.narrow(0, begin, rows)).to(at::kFloat);
    if (weights_.position_embeddings.defined()) {
      sum.add_(weights_.position_embeddings.index_select(
          0, tokens.positions.narrow(0, begin, rows)));
    }
    if (weights_.token_type_row.defined()) sum.add_(weights_.token_type_row);
    weights_.embeddings_norm.InPlace(sum);
    x.narrow(0, begin, rows).copy_(sum);
  });
  return x;
}

int64_t Encoder::HeadsPerPass(int64_t query_rows, int64_t key_rows) const {
  // Per head: Q and the output over the queries, K and V over the keys.
  const int64_t bytes_per_head =
      static_cast<int64_t>(
          at::elementSize(AttentionDType(weights_.word_embeddings))) *
      config_.head_dim() * (2 * query_rows + 2 * key_rows);
  return std::clamp<int64_t>(
      options_.max_attention_pass_bytes / std::max<int64_t>(1, bytes_per_head),
      1, config_.num_attention_heads);
}

at::Tensor Encoder::ProjectHeads(const LayerWeights& layer, const at::Tensor& x,
                                 int first_part, int num_parts, HeadGroup group,
                                 const RotaryAngles* rotary) const {
  const bool pre = config_.norm_placement == NormPlacement::kPre;
  const int64_t head_dim = config_.head_dim();
  const Linear linear =
      GroupColumns(layer.attention.query_key_value, config_.hidden_size,
                   head_dim, first_part, num_parts, group.begin, group.count);
  at::Tensor y = at::empty({x.size(0), linear.weight_t.size(1)},
                           x.options().dtype(AttentionDType(x)));
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    const at::Tensor in = x.narrow(0, begin, rows);
    const at::Tensor normed =
        pre ? ToCompute(layer.attention_norm(in.to(at::kFloat))) : in;
    at::Tensor out = y.narrow(0, begin, rows);
    // In float32 a product straight into y; else in y's reduced dtype.
    linear.Into(normed, out);
    if (rotary == nullptr || first_part != 0) return;
    const RotaryTables tables = rotary->Rows(begin, rows);
    // Queries and keys are adjacent columns: rotate both as 2·count heads,
    // in float32 (bfloat16 angles would be off by up to 2⁻⁹ of a turn).
    at::Tensor query_key = out.narrow(1, 0, 2 * group.count * head_dim);
    at::Tensor rotated = query_key.to(at::kFloat);
    ApplyRotaryInPlace(rotated.view({rows, 2 * group.count, head_dim}),
                       tables.cos, tables.sin);
    if (!rotated.is_same(query_key)) query_key.copy_(rotated);
  });
  return y;
}

at::Tensor Encoder::FeedForwardInner(const LayerWeights& layer,
                                     const at::Tensor& x) const {
  if (config_.feed_forward == FeedForward::kGated) {
    return GatedActivation(config_.hidden_act, layer.intermediate(x));
  }
  return layer.intermediate.Activated(x, config_.hidden_act);
}

void Encoder::FinishLayer(const LayerWeights& layer, at::Tensor& a,
                          const at::Tensor& attended) const {
  const bool pre = config_.norm_placement == NormPlacement::kPre;
  if (a.scalar_type() == at::kFloat) {
    // Residual sums and norms in place: a += attended·Wo + bo, then
    // a += act(x·Wi + bi)·W2 + b2, each product starting from the residual.
    Blocks(a.size(0), [&](int64_t begin, int64_t end) {
      const int64_t rows = end - begin;
      at::Tensor a_rows = a.narrow(0, begin, rows);
      layer.attention.output.AddInto(attended.narrow(0, begin, rows), a_rows);
      if (!pre) layer.attention_norm.InPlace(a_rows);
      const at::Tensor inner =
          FeedForwardInner(layer, pre ? layer.output_norm(a_rows) : a_rows);
      layer.output.AddInto(inner, a_rows);
      if (!pre) layer.output_norm.InPlace(a_rows);
    });
    return;
  }
  Blocks(a.size(0), [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    at::Tensor a_rows = a.narrow(0, begin, rows);
    // Residual sums and norms in float32; the products in a's dtype.
    at::Tensor h =
        layer.attention.output(ToCompute(attended.narrow(0, begin, rows)))
            .to(at::kFloat);
    h.add_(a_rows);
    if (!pre) h = layer.attention_norm(h);
    at::Tensor inner =
        FeedForwardInner(layer, ToCompute(pre ? layer.output_norm(h) : h));
    at::Tensor f = layer.output(inner).to(at::kFloat);
    inner.reset();
    f.add_(h);
    a_rows.copy_(pre ? f : layer.output_norm(f));
  });
}

absl::StatusOr<at::Tensor> Encoder::AttendHeads(
    const LayerWeights& layer, const at::Tensor& a,
    absl::Span<const int64_t> a_offsets, const at::Tensor& b,
    absl::Span<const int64_t> b_offsets, const LayerAttention& how,
    HeadGroup group) const {
  const int64_t head_dim = config_.head_dim();
  const int64_t width = group.count * head_dim;
  at::Tensor q, kv;
  if (!b.defined()) {  // self-attention: one product for all three
    kv = ProjectHeads(layer, a, 0, 3, group, how.rotary);
    q = kv.narrow(1, 0, width);
    kv = kv.narrow(1, width, 2 * width);
    b_offsets = a_offsets;
  } else {
    q = ProjectHeads(layer, a, 0, 1, group, nullptr);
    kv = ProjectHeads(layer, b, 1, 2, group, nullptr);
  }
  const auto heads = [&](const at::Tensor& x) {
    return x.view({-1, group.count, head_dim});
  };
  return attention::AttendPacked(heads(q), heads(kv.narrow(1, 0, width)),
                                 heads(kv.narrow(1, width, width)), a_offsets,
                                 b_offsets, layer.attention.projection,
                                 how.options != nullptr ? *how.options
                                                        : options_.attention,
                                 how.projection);
}

absl::StatusOr<at::Tensor> Encoder::Layer(const LayerWeights& layer,
                                          at::Tensor a,
                                          absl::Span<const int64_t> a_offsets,
                                          const at::Tensor& b,
                                          absl::Span<const int64_t> b_offsets,
                                          const LayerAttention& how) const {
  const int64_t hidden = config_.hidden_size;
  const int64_t heads = config_.num_attention_heads;
  const int64_t head_dim = config_.head_dim();
  const int64_t per_pass =
      HeadsPerPass(a.size(0), b.defined() ? b.size(0) : a.size(0));
  // The projections of a group live only inside AttendHeads: freed before
  // the next group and before the feed-forward.
  at::Tensor attended;
  for (int64_t begin = 0; begin < heads; begin += per_pass) {
    const HeadGroup group{begin, std::min(per_pass, heads - begin)};
    ASSIGN_OR_RETURN(
        at::Tensor out,
        AttendHeads(layer, a, a_offsets, b, b_offsets, how, group));
    if (group.count == heads) {
      attended = out.view({-1, hidden});
      break;
    }
    // Several passes: gather them in a's dtype (half of float32's bytes
    // for a bfloat16 model).
    if (!attended.defined()) attended = at::empty_like(a);
    attended.narrow(1, begin * head_dim, group.count * head_dim)
        .copy_(out.view({-1, group.count * head_dim}));
  }
  FinishLayer(layer, a, attended);
  return a;
}

at::Tensor Encoder::Repeat(const at::Tensor& points, int64_t sequences,
                           std::vector<int64_t>& offsets) const {
  offsets.resize(sequences + 1);
  for (int64_t s = 0; s <= sequences; ++s) offsets[s] = s * points.size(0);
  return points.repeat({sequences, 1});
}

namespace {

// RoBERTa's positions (PositionIds::kAfterPadding): pad tokens take `pad`,
// the others pad + 1, pad + 2, … in each sequence.
void NumberAfterPadding(const int64_t* ids, absl::Span<const int64_t> offsets,
                        int64_t pad, int64_t* position) {
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    int64_t next = pad + 1;
    for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
      position[t] = ids[t] == pad ? pad : next++;
    }
  }
}

}  // namespace

Encoder::Tokens Encoder::MakeTokens(const at::Tensor& token_ids,
                                    absl::Span<const int64_t> offsets) const {
  Tokens tokens;
  tokens.offsets.assign(offsets.begin(), offsets.end());
  const PositionEmbedding positions = config_.position_embedding_type;
  if (positions == PositionEmbedding::kNone) return tokens;
  // Positions restart in every sequence: packing changes nothing.
  at::Tensor host = at::empty({token_ids.size(0)}, at::kLong);
  int64_t* position = host.data_ptr<int64_t>();
  if (config_.position_ids == PositionIds::kAfterPadding) {
    const at::Tensor ids = token_ids.to(at::kCPU, at::kLong).contiguous();
    NumberAfterPadding(ids.data_ptr<int64_t>(), offsets, config_.pad_token_id,
                       position);
  } else {
    for (size_t s = 0; s + 1 < offsets.size(); ++s) {
      for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
        position[t] = t - offsets[s];
      }
    }
  }
  tokens.positions = host.to(token_ids.device());
  if (positions == PositionEmbedding::kRotary) {
    tokens.rotary =
        RotaryAngles(tokens.positions, config_.head_dim(), config_.rotary_base,
                     options_.max_rotary_table_bytes, &rotary_positions_);
    if (config_.local_attention_window > 0) {
      tokens.local_rotary = RotaryAngles(
          tokens.positions, config_.head_dim(), config_.local_rotary_base,
          options_.max_rotary_table_bytes, &local_rotary_positions_);
    }
  }
  return tokens;
}

absl::StatusOr<at::Tensor> Encoder::RunEncoder(
    at::Tensor x, const Tokens& tokens, const StageObserver& observer) const {
  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    ASSIGN_OR_RETURN(
        x, Layer(weights_.layers[l], std::move(x), tokens.offsets, at::Tensor(),
                 tokens.offsets, AttentionOfLayer(static_cast<int64_t>(l),
                                                  tokens)));
    if (observer) observer(x);
  }
  return x;
}

absl::StatusOr<at::Tensor> Encoder::RunCrossAttention(
    at::Tensor x, const Tokens& tokens, std::vector<int64_t>& latent_offsets,
    const StageObserver& observer) const {
  // Layer 0: the latents read the tokens; then they attend to each other.
  const int64_t sequences = static_cast<int64_t>(tokens.offsets.size()) - 1;
  // Repeat fills latent_offsets, so it runs before Layer reads them.
  at::Tensor latents = Repeat(weights_.latents, sequences, latent_offsets);
  ASSIGN_OR_RETURN(at::Tensor y,
                   Layer(weights_.layers[0], std::move(latents), latent_offsets,
                         x, tokens.offsets, {}));
  x.reset();  // the tokens' vectors: only layer 0 reads them
  if (observer) observer(y);
  for (size_t l = 1; l < weights_.layers.size(); ++l) {
    ASSIGN_OR_RETURN(y, Layer(weights_.layers[l], std::move(y), latent_offsets,
                              at::Tensor(), latent_offsets, {}));
    if (observer) observer(y);
  }
  return y;
}

absl::StatusOr<at::Tensor> Encoder::RunIsab(
    at::Tensor x, const Tokens& tokens, const StageObserver& observer) const {
  const int64_t sequences = static_cast<int64_t>(tokens.offsets.size()) - 1;
  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    std::vector<int64_t> induced_offsets;
    at::Tensor points =  // before Layer reads induced_offsets
        Repeat(weights_.inducing_points[l], sequences, induced_offsets);
    ASSIGN_OR_RETURN(const at::Tensor induced,
                     Layer(weights_.induced[l], std::move(points),
                           induced_offsets, x, tokens.offsets, {}));
    if (observer) observer(induced);
    ASSIGN_OR_RETURN(x, Layer(weights_.layers[l], std::move(x), tokens.offsets,
                              induced, induced_offsets, {}));
    if (observer) observer(x);
  }
  return x;
}

absl::StatusOr<PackedVectors> Encoder::ForwardWhole(
    const at::Tensor& token_ids, absl::Span<const int64_t> offsets,
    const StageObserver& observer, at::Tensor into) const {
  const Tokens tokens = MakeTokens(token_ids, offsets);
  at::Tensor embedded = Embed(token_ids, tokens, std::move(into));
  if (observer) observer(embedded);
  PackedVectors out;
  out.offsets = tokens.offsets;
  absl::StatusOr<at::Tensor> values;
  switch (config_.block) {
    case BlockType::kEncoder:  // the layers overwrite the embeddings
      values = RunEncoder(std::move(embedded), tokens, observer);
      break;
    case BlockType::kCrossAttention:
      values =
          RunCrossAttention(std::move(embedded), tokens, out.offsets, observer);
      break;
    case BlockType::kIsab:
      values = RunIsab(std::move(embedded), tokens, observer);
      break;
  }
  RETURN_IF_ERROR(values.status());
  out.values = *std::move(values);
  if (config_.norm_placement == NormPlacement::kPre) {
    ApplyNormInPlace(weights_.final_norm, out.values);
  }
  return out;
}

}  // namespace favor::model::internal
