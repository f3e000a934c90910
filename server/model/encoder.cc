#include "server/model/encoder.h"

#include <ATen/ATen.h>

#include <utility>

#include "server/common/status_macros.h"

namespace favor::model::internal {

struct Encoder::Tokens {
  std::vector<int64_t> offsets;
  at::Tensor positions;  // (T) int64 on the device; undefined if unused
  RotaryTables rotary;   // rotary models only
};

Encoder::Encoder(ModelConfig config, EncoderWeights weights,
                 EncoderOptions options)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      options_(std::move(options)) {}

at::Tensor Encoder::ApplyNorm(const Norm& norm, const at::Tensor& x) const {
  at::Tensor y = at::empty_like(x);
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    y.narrow(0, begin, end - begin)
        .copy_(norm(x.narrow(0, begin, end - begin)));
  });
  return y;
}

at::Tensor Encoder::Embed(const at::Tensor& token_ids,
                          const Tokens& tokens) const {
  const at::Tensor& words = weights_.word_embeddings;
  at::Tensor x = at::empty({token_ids.size(0), words.size(1)}, words.options());
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    at::Tensor sum = words.index_select(0, token_ids.narrow(0, begin, rows));
    if (weights_.position_embeddings.defined()) {
      sum.add_(weights_.position_embeddings.index_select(
          0, tokens.positions.narrow(0, begin, rows)));
    }
    if (weights_.token_type_row.defined()) sum.add_(weights_.token_type_row);
    x.narrow(0, begin, rows).copy_(weights_.embeddings_norm(sum));
  });
  return x;
}

void Encoder::ProjectSelf(const LayerWeights& layer, const at::Tensor& x,
                          const Tokens* rotary_tokens, at::Tensor& qkv) const {
  const bool pre = config_.norm_placement == NormPlacement::kPre;
  const Linear& linear = layer.attention.query_key_value;
  const int64_t hidden = config_.hidden_size;
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    const at::Tensor in = x.narrow(0, begin, rows);
    at::Tensor out = qkv.narrow(0, begin, rows);
    at::addmm_out(out, linear.bias, pre ? layer.attention_norm(in) : in,
                  linear.weight_t);
    if (rotary_tokens == nullptr) return;
    // Queries and keys are adjacent columns: rotate both as 2·heads heads.
    ApplyRotaryInPlace(
        out.narrow(1, 0, 2 * hidden)
            .view({rows, 2 * config_.num_attention_heads, config_.head_dim()}),
        rotary_tokens->rotary.cos.narrow(0, begin, rows),
        rotary_tokens->rotary.sin.narrow(0, begin, rows));
  });
}

at::Tensor Encoder::Project(const LayerWeights& layer, const at::Tensor& x,
                            const Linear& linear) const {
  const bool pre = config_.norm_placement == NormPlacement::kPre;
  at::Tensor y = at::empty({x.size(0), linear.weight_t.size(1)}, x.options());
  Blocks(x.size(0), [&](int64_t begin, int64_t end) {
    const at::Tensor in = x.narrow(0, begin, end - begin);
    at::Tensor out = y.narrow(0, begin, end - begin);
    at::addmm_out(out, linear.bias, pre ? layer.attention_norm(in) : in,
                  linear.weight_t);
  });
  return y;
}

at::Tensor Encoder::FinishLayer(const LayerWeights& layer, const at::Tensor& a,
                                const at::Tensor& attended) const {
  const bool pre = config_.norm_placement == NormPlacement::kPre;
  at::Tensor y = at::empty_like(a);
  Blocks(a.size(0), [&](int64_t begin, int64_t end) {
    const int64_t rows = end - begin;
    at::Tensor h = layer.attention.output(attended.narrow(0, begin, rows));
    h.add_(a.narrow(0, begin, rows));
    if (!pre) h = layer.attention_norm(h);
    at::Tensor inner = layer.intermediate(pre ? layer.output_norm(h) : h);
    ActivateInPlace(config_.hidden_act, inner);
    at::Tensor f = layer.output(inner);
    f.add_(h);
    y.narrow(0, begin, rows).copy_(pre ? f : layer.output_norm(f));
  });
  return y;
}

absl::StatusOr<at::Tensor> Encoder::Layer(const LayerWeights& layer,
                                          const at::Tensor& a,
                                          absl::Span<const int64_t> a_offsets,
                                          const at::Tensor& b,
                                          absl::Span<const int64_t> b_offsets,
                                          const Tokens* rotary_tokens) const {
  const int64_t hidden = config_.hidden_size;
  at::Tensor q, k, v;
  if (!b.defined()) {  // self-attention: one GEMM for all three
    at::Tensor qkv = at::empty({a.size(0), 3 * hidden}, a.options());
    ProjectSelf(layer, a, rotary_tokens, qkv);
    q = qkv.narrow(1, 0, hidden);
    k = qkv.narrow(1, hidden, hidden);
    v = qkv.narrow(1, 2 * hidden, hidden);
  } else {
    const Linear& qkv = layer.attention.query_key_value;
    q = Project(layer, a, qkv.Columns(0, hidden));
    const at::Tensor kv = Project(layer, b, qkv.Columns(hidden, 2 * hidden));
    k = kv.narrow(1, 0, hidden);
    v = kv.narrow(1, hidden, hidden);
  }
  ASSIGN_OR_RETURN(
      const at::Tensor attended,
      Attend(layer, q, k, v, a_offsets, b.defined() ? b_offsets : a_offsets));
  // Free the projections (3 · rows · H floats) before the feed-forward.
  q.reset();
  k.reset();
  v.reset();
  return FinishLayer(layer, a, attended.view({-1, hidden}));
}

absl::StatusOr<at::Tensor> Encoder::Attend(
    const LayerWeights& layer, const at::Tensor& q, const at::Tensor& k,
    const at::Tensor& v, absl::Span<const int64_t> q_offsets,
    absl::Span<const int64_t> k_offsets) const {
  const int64_t heads = config_.num_attention_heads;
  const int64_t head_dim = config_.head_dim();
  return attention::AttendPacked(
      q.view({-1, heads, head_dim}), k.view({-1, heads, head_dim}),
      v.view({-1, heads, head_dim}), q_offsets, k_offsets,
      layer.attention.projection, options_.attention);
}

at::Tensor Encoder::Repeat(const at::Tensor& points, int64_t sequences,
                           std::vector<int64_t>& offsets) const {
  offsets.resize(sequences + 1);
  for (int64_t s = 0; s <= sequences; ++s) offsets[s] = s * points.size(0);
  return points.repeat({sequences, 1});
}

Encoder::Tokens Encoder::MakeTokens(const at::Tensor& token_ids,
                                    absl::Span<const int64_t> offsets) const {
  Tokens tokens;
  tokens.offsets.assign(offsets.begin(), offsets.end());
  const PositionEmbedding positions = config_.position_embedding_type;
  if (positions == PositionEmbedding::kNone) return tokens;
  // Positions restart at 0 in every sequence: packing changes nothing.
  at::Tensor host = at::empty({token_ids.size(0)}, at::kLong);
  int64_t* position = host.data_ptr<int64_t>();
  for (size_t s = 0; s + 1 < offsets.size(); ++s) {
    for (int64_t t = offsets[s]; t < offsets[s + 1]; ++t) {
      position[t] = t - offsets[s];
    }
  }
  tokens.positions = host.to(token_ids.device());
  if (positions == PositionEmbedding::kRotary) {
    tokens.rotary = MakeRotaryTables(tokens.positions, config_.head_dim(),
                                     config_.rotary_base);
  }
  return tokens;
}

absl::StatusOr<at::Tensor> Encoder::RunEncoder(at::Tensor x,
                                               const Tokens& tokens) const {
  const Tokens* rotary =
      config_.position_embedding_type == PositionEmbedding::kRotary ? &tokens
                                                                    : nullptr;
  for (const LayerWeights& layer : weights_.layers) {
    ASSIGN_OR_RETURN(x, Layer(layer, x, tokens.offsets, at::Tensor(),
                              tokens.offsets, rotary));
  }
  return x;
}

absl::StatusOr<at::Tensor> Encoder::RunCrossAttention(
    const at::Tensor& x, const Tokens& tokens,
    std::vector<int64_t>& latent_offsets) const {
  // Layer 0: the latents read the tokens; then they attend to each other.
  const int64_t sequences = static_cast<int64_t>(tokens.offsets.size()) - 1;
  const at::Tensor latents =
      Repeat(weights_.latents, sequences, latent_offsets);
  ASSIGN_OR_RETURN(at::Tensor y,
                   Layer(weights_.layers[0], latents, latent_offsets, x,
                         tokens.offsets, nullptr));
  for (size_t l = 1; l < weights_.layers.size(); ++l) {
    ASSIGN_OR_RETURN(y, Layer(weights_.layers[l], y, latent_offsets,
                              at::Tensor(), latent_offsets, nullptr));
  }
  return y;
}

absl::StatusOr<at::Tensor> Encoder::RunIsab(at::Tensor x,
                                            const Tokens& tokens) const {
  const int64_t sequences = static_cast<int64_t>(tokens.offsets.size()) - 1;
  for (size_t l = 0; l < weights_.layers.size(); ++l) {
    std::vector<int64_t> induced_offsets;
    const at::Tensor points =
        Repeat(weights_.inducing_points[l], sequences, induced_offsets);
    ASSIGN_OR_RETURN(const at::Tensor induced,
                     Layer(weights_.induced[l], points, induced_offsets, x,
                           tokens.offsets, nullptr));
    ASSIGN_OR_RETURN(x, Layer(weights_.layers[l], x, tokens.offsets, induced,
                              induced_offsets, nullptr));
  }
  return x;
}

absl::StatusOr<PackedVectors> Encoder::Forward(
    const at::Tensor& token_ids, absl::Span<const int64_t> offsets) const {
  const Tokens tokens = MakeTokens(token_ids, offsets);
  const at::Tensor embedded = Embed(token_ids, tokens);
  PackedVectors out;
  out.offsets = tokens.offsets;
  absl::StatusOr<at::Tensor> values;
  switch (config_.block) {
    case BlockType::kEncoder:
      values = RunEncoder(embedded, tokens);
      break;
    case BlockType::kCrossAttention:
      values = RunCrossAttention(embedded, tokens, out.offsets);
      break;
    case BlockType::kIsab:
      values = RunIsab(embedded, tokens);
      break;
  }
  RETURN_IF_ERROR(values.status());
  out.values = *std::move(values);
  if (config_.norm_placement == NormPlacement::kPre) {
    out.values = ApplyNorm(weights_.final_norm, out.values);
  }
  return out;
}

}  // namespace favor::model::internal
