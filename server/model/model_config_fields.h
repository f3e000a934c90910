// The config.json schema, written once: every field of ModelConfig and
// AttentionConfig with its JSON name, and the names of every enum value.
//
// The reader (model_config_parse.cc), the writer (model_config_json.cc),
// operator== (model_config_fields.cc) and the check of docs/models.md's
// field tables (tests/model/model_config_fields_test.cc) all walk these
// tables, so a new field is its member in model_config.h plus one row here.
// A member without a row does not compile (the static_asserts in
// model_config_fields.cc); a row without a line in the docs fails the test.
// How a field is read and written follows from its member's type.
//
// Implementation detail of server/model.
#ifndef FAVOR_SERVER_MODEL_MODEL_CONFIG_FIELDS_H_
#define FAVOR_SERVER_MODEL_MODEL_CONFIG_FIELDS_H_

#include <cstddef>
#include <type_traits>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/model/model_config.h"

namespace favor::model::internal {

template <typename T>
struct EnumName {
  T value;
  absl::string_view name;
};

// The first name of a value is how it is written; later ones are aliases
// accepted when reading. Error messages list every name in this order.
inline constexpr EnumName<Activation> kActivationNames[] = {
    {Activation::kGelu, "gelu"},
    {Activation::kGeluTanh, "gelu_tanh"},
    {Activation::kRelu, "relu"},
    {Activation::kSilu, "silu"},
    {Activation::kGeluTanh, "gelu_new"},
    {Activation::kGeluTanh, "gelu_pytorch_tanh"},
};
inline constexpr EnumName<FeedForward> kFeedForwardNames[] = {
    {FeedForward::kDense, "dense"}, {FeedForward::kGated, "gated"}};
inline constexpr EnumName<NormType> kNormNames[] = {
    {NormType::kLayerNorm, "layer_norm"}, {NormType::kScaleNorm, "scale_norm"}};
inline constexpr EnumName<NormPlacement> kPlacementNames[] = {
    {NormPlacement::kPost, "post"}, {NormPlacement::kPre, "pre"}};
inline constexpr EnumName<PositionEmbedding> kPositionNames[] = {
    {PositionEmbedding::kAbsolute, "absolute"},
    {PositionEmbedding::kRotary, "rotary"},
    {PositionEmbedding::kNone, "none"}};
inline constexpr EnumName<PositionIds> kPositionIdsNames[] = {
    {PositionIds::kFromZero, "from_zero"},
    {PositionIds::kAfterPadding, "after_padding"}};
inline constexpr EnumName<BlockType> kBlockNames[] = {
    {BlockType::kEncoder, "encoder"},
    {BlockType::kCrossAttention, "cross_attention"},
    {BlockType::kIsab, "isab"}};
inline constexpr EnumName<Pooling> kPoolingNames[] = {
    {Pooling::kMean, "mean"},
    {Pooling::kCls, "cls"},
    {Pooling::kAttention, "attention"},
    {Pooling::kNone, "none"},
    {Pooling::kMax, "max"},
    {Pooling::kLastToken, "last_token"}};
inline constexpr EnumName<AccentStripping> kAccentStrippingNames[] = {
    {AccentStripping::kAsLowercase, "as_lowercase"},
    {AccentStripping::kStrip, "strip"},
    {AccentStripping::kKeep, "keep"}};
inline constexpr EnumName<attention::ProjectionOptions::RowNorm>
    kRowNormNames[] = {
        {attention::ProjectionOptions::RowNorm::kChi, "chi"},
        {attention::ProjectionOptions::RowNorm::kSqrtDim, "sqrt_dim"}};

// The name table of an enum, chosen by the type of the argument. The attention
// kernel has none here: its names belong to server/attention/kernel.h.
inline absl::Span<const EnumName<Activation>> EnumNames(Activation) {
  return kActivationNames;
}
inline absl::Span<const EnumName<FeedForward>> EnumNames(FeedForward) {
  return kFeedForwardNames;
}
inline absl::Span<const EnumName<NormType>> EnumNames(NormType) {
  return kNormNames;
}
inline absl::Span<const EnumName<NormPlacement>> EnumNames(NormPlacement) {
  return kPlacementNames;
}
inline absl::Span<const EnumName<PositionEmbedding>> EnumNames(
    PositionEmbedding) {
  return kPositionNames;
}
inline absl::Span<const EnumName<PositionIds>> EnumNames(PositionIds) {
  return kPositionIdsNames;
}
inline absl::Span<const EnumName<BlockType>> EnumNames(BlockType) {
  return kBlockNames;
}
inline absl::Span<const EnumName<Pooling>> EnumNames(Pooling) {
  return kPoolingNames;
}
inline absl::Span<const EnumName<attention::ProjectionOptions::RowNorm>>
EnumNames(attention::ProjectionOptions::RowNorm) {
  return kRowNormNames;
}
inline absl::Span<const EnumName<AccentStripping>> EnumNames(AccentStripping) {
  return kAccentStrippingNames;
}

// The members that are JSON objects of their own fields ("attention",
// "tokenizer"): each has its own table below.
template <typename T>
inline constexpr bool kIsNestedConfig =
    std::is_same_v<T, AttentionConfig> || std::is_same_v<T, TokenizerConfig>;

// ConfigFields<Config>::ForEach(fn) calls fn(json_name, &Config::member) for
// every field, in the order config.json is written and read (an error names
// the first bad field in this order).
template <typename Config>
struct ConfigFields;

template <>
struct ConfigFields<AttentionConfig> {
  template <typename Fn>
  static constexpr void ForEach(Fn&& fn) {
    using C = AttentionConfig;
    fn("kernel", &C::kernel);
    fn("num_random_features", &C::num_random_features);
    fn("orthogonal", &C::orthogonal);
    fn("simplex", &C::simplex);
    fn("row_norm", &C::row_norm);
    fn("projection_seed", &C::projection_seed);
    fn("causal", &C::causal);
    fn("feature_epsilon", &C::feature_epsilon);
  }
};

template <>
struct ConfigFields<TokenizerConfig> {
  template <typename Fn>
  static constexpr void ForEach(Fn&& fn) {
    using C = TokenizerConfig;
    fn("file", &C::file);
    fn("lowercase", &C::lowercase);
    fn("strip_accents", &C::strip_accents);
    fn("handle_chinese_chars", &C::handle_chinese_chars);
    fn("clean_text", &C::clean_text);
    fn("unk_token", &C::unk_token);
    fn("continuing_subword_prefix", &C::continuing_subword_prefix);
    fn("max_input_chars_per_word", &C::max_input_chars_per_word);
    fn("cls_token", &C::cls_token);
    fn("sep_token", &C::sep_token);
    fn("pad_token", &C::pad_token);
    fn("mask_token", &C::mask_token);
    fn("add_bos", &C::add_bos);
    fn("add_eos", &C::add_eos);
  }
};

template <>
struct ConfigFields<ModelConfig> {
  template <typename Fn>
  static constexpr void ForEach(Fn&& fn) {
    using C = ModelConfig;
    fn("version", &C::version);
    fn("vocab_size", &C::vocab_size);
    fn("type_vocab_size", &C::type_vocab_size);
    fn("pad_token_id", &C::pad_token_id);
    fn("unk_token_id", &C::unk_token_id);
    fn("cls_token_id", &C::cls_token_id);
    fn("sep_token_id", &C::sep_token_id);
    fn("mask_token_id", &C::mask_token_id);
    fn("hidden_size", &C::hidden_size);
    fn("num_hidden_layers", &C::num_hidden_layers);
    fn("num_attention_heads", &C::num_attention_heads);
    fn("intermediate_size", &C::intermediate_size);
    fn("hidden_act", &C::hidden_act);
    fn("feed_forward", &C::feed_forward);
    fn("linear_bias", &C::linear_bias);
    fn("norm_bias", &C::norm_bias);
    fn("first_layer_attention_norm", &C::first_layer_attention_norm);
    fn("norm", &C::norm);
    fn("norm_placement", &C::norm_placement);
    fn("layer_norm_eps", &C::layer_norm_eps);
    fn("position_embedding_type", &C::position_embedding_type);
    fn("max_position_embeddings", &C::max_position_embeddings);
    fn("position_ids", &C::position_ids);
    fn("rotary_base", &C::rotary_base);
    fn("local_attention_window", &C::local_attention_window);
    fn("global_attention_every_n_layers", &C::global_attention_every_n_layers);
    fn("local_rotary_base", &C::local_rotary_base);
    fn("max_sequence_length", &C::max_sequence_length);
    fn("attention", &C::attention);  // an object: ConfigFields<AttentionConfig>
    fn("block", &C::block);
    fn("num_latents", &C::num_latents);
    fn("num_inducing_points", &C::num_inducing_points);
    fn("pooling", &C::pooling);
    fn("normalize", &C::normalize);
    fn("tokenizer", &C::tokenizer);  // an object: ConfigFields<TokenizerConfig>
  }
};

// Rows in a table.
template <typename Config>
constexpr size_t ConfigFieldCount() {
  size_t count = 0;
  ConfigFields<Config>::ForEach([&count](absl::string_view, auto) { ++count; });
  return count;
}

}  // namespace favor::model::internal

#endif  // FAVOR_SERVER_MODEL_MODEL_CONFIG_FIELDS_H_
