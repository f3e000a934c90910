#include "server/model/weight_layout.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/attention/kernel.h"

namespace favor::model {
namespace {

// Makes the layout's tensors and keeps every one it made, in order: the
// list ExpectedWeights returns is exactly what the visitor was handed.
class TensorList {
 public:
  TensorList(const ModelConfig& config, std::string prefix)
      : config_(config), prefix_(std::move(prefix)) {}

  ExpectedTensor Add(const std::string& name, std::vector<int64_t> shape,
                     bool required = true) {
    tensors_.push_back({prefix_ + name, std::move(shape), required});
    return tensors_.back();
  }
  LinearTensors Linear(const std::string& prefix, int64_t out, int64_t in) {
    LinearTensors linear;
    linear.weight = Add(prefix + ".weight", {out, in});
    if (config_.linear_bias) linear.bias = Add(prefix + ".bias", {out});
    return linear;
  }
  NormTensors Norm(const std::string& prefix) {
    NormTensors norm;
    if (config_.norm == NormType::kScaleNorm) {
      norm.scale = Add(prefix + ".scale", {1});
    } else {
      norm.weight = Add(prefix + ".weight", {config_.hidden_size});
      if (config_.norm_bias) {
        norm.bias = Add(prefix + ".bias", {config_.hidden_size});
      }
    }
    return norm;
  }
  // One BERT-structured layer under `prefix`; without `attention_norm`
  // its N1 is the identity (no tensors).
  LayerTensors Layer(const std::string& prefix, uint64_t sublayer,
                     bool attention_norm = true);

  std::vector<ExpectedTensor> Take() { return std::move(tensors_); }

 private:
  AttentionTensors Attention(const std::string& prefix, uint64_t sublayer);

  const ModelConfig& config_;
  const std::string prefix_;
  std::vector<ExpectedTensor> tensors_;
};

AttentionTensors TensorList::Attention(const std::string& prefix,
                                       uint64_t sublayer) {
  const int64_t hidden = config_.hidden_size;
  const std::string self = prefix + ".self";
  AttentionTensors attention;
  attention.query = Linear(self + ".query", hidden, hidden);
  attention.key = Linear(self + ".key", hidden, hidden);
  attention.value = Linear(self + ".value", hidden, hidden);
  const AttentionConfig& options = config_.attention;
  if (attention::TraitsOf(options.kernel).uses_projection) {
    attention.projection = Add(
        self + ".projection", {options.num_random_features, config_.head_dim()},
        /*required=*/false);
  }
  attention.output = Linear(prefix + ".output.dense", hidden, hidden);
  attention.sublayer = sublayer;
  return attention;
}

LayerTensors TensorList::Layer(const std::string& prefix, uint64_t sublayer,
                               bool attention_norm) {
  const int64_t hidden = config_.hidden_size;
  const int64_t intermediate = config_.intermediate_size;
  LayerTensors layer;
  layer.attention = Attention(prefix + ".attention", sublayer);
  if (attention_norm) {
    layer.attention_norm = Norm(prefix + ".attention.output.LayerNorm");
  }
  layer.intermediate =
      Linear(prefix + ".intermediate.dense", intermediate, hidden);
  if (config_.feed_forward == FeedForward::kGated) {
    layer.gate = Linear(prefix + ".intermediate.gate", intermediate, hidden);
  }
  layer.output = Linear(prefix + ".output.dense", hidden, intermediate);
  layer.output_norm = Norm(prefix + ".output.LayerNorm");
  return layer;
}

void VisitEmbeddings(const ModelConfig& config, TensorList& list,
                     WeightLayoutVisitor& visitor) {
  const int64_t hidden = config.hidden_size;
  visitor.WordEmbeddings(list.Add("embeddings.word_embeddings.weight",
                                  {config.vocab_size, hidden}));
  if (config.position_embedding_type == PositionEmbedding::kAbsolute) {
    visitor.PositionEmbeddings(
        list.Add("embeddings.position_embeddings.weight",
                 {config.max_position_embeddings, hidden}));
  }
  if (config.type_vocab_size > 0) {
    visitor.TokenTypeEmbeddings(
        list.Add("embeddings.token_type_embeddings.weight",
                 {config.type_vocab_size, hidden}, /*required=*/false));
  }
  visitor.EmbeddingsNorm(list.Norm("embeddings.LayerNorm"));
}

// The blocks; attention sublayers are counted in forward order (an ISAB
// layer's induced attention runs first).
void VisitBlocks(const ModelConfig& config, TensorList& list,
                 WeightLayoutVisitor& visitor) {
  const int64_t hidden = config.hidden_size;
  if (config.block == BlockType::kCrossAttention) {
    visitor.Latents(list.Add("encoder.latents", {config.num_latents, hidden}));
  }
  const bool isab = config.block == BlockType::kIsab;
  for (int64_t n = 0; n < config.num_hidden_layers; ++n) {
    const std::string prefix = absl::StrCat("encoder.layer.", n);
    const auto layer = static_cast<uint64_t>(n);
    if (isab) {
      visitor.InducingPoints(list.Add(prefix + ".inducing_points",
                                      {config.num_inducing_points, hidden}));
      visitor.InducedLayer(list.Layer(prefix + ".induced", 2 * layer));
    }
    visitor.Layer(list.Layer(prefix, isab ? 2 * layer + 1 : layer,
                             n > 0 || config.first_layer_attention_norm));
  }
  if (config.norm_placement == NormPlacement::kPre) {
    visitor.FinalNorm(list.Norm("encoder.final_norm"));
  }
}

void VisitPooler(const ModelConfig& config, TensorList& list,
                 WeightLayoutVisitor& visitor) {
  const int64_t hidden = config.hidden_size;
  visitor.PoolerQuery(
      list.Add("pooler.query", {hidden},
               /*required=*/config.pooling == Pooling::kAttention));
  visitor.Unused(list.Add("pooler.dense.weight", {hidden, hidden},
                          /*required=*/false));
  visitor.Unused(list.Add("pooler.dense.bias", {hidden}, /*required=*/false));
}

// ExpectedWeights needs only the list.
class ListOnly final : public WeightLayoutVisitor {
 public:
  void WordEmbeddings(const ExpectedTensor&) override {}
  void PositionEmbeddings(const ExpectedTensor&) override {}
  void TokenTypeEmbeddings(const ExpectedTensor&) override {}
  void EmbeddingsNorm(const NormTensors&) override {}
  void Latents(const ExpectedTensor&) override {}
  void InducingPoints(const ExpectedTensor&) override {}
  void InducedLayer(const LayerTensors&) override {}
  void Layer(const LayerTensors&) override {}
  void FinalNorm(const NormTensors&) override {}
  void PoolerQuery(const ExpectedTensor&) override {}
  void Unused(const ExpectedTensor&) override {}
};

}  // namespace

std::vector<ExpectedTensor> VisitWeightLayout(const ModelConfig& config,
                                              const WeightNaming& naming,
                                              WeightLayoutVisitor& visitor) {
  TensorList list(config, naming.prefix);
  VisitEmbeddings(config, list, visitor);
  VisitBlocks(config, list, visitor);
  VisitPooler(config, list, visitor);
  return list.Take();
}

std::vector<ExpectedTensor> ExpectedWeights(const ModelConfig& config,
                                            const WeightNaming& naming) {
  ListOnly visitor;
  return VisitWeightLayout(config, naming, visitor);
}

}  // namespace favor::model
