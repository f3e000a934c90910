#include "server/model/dtype_agreement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace favor::model {
namespace {

// Input i of n: length round(max^(i / (n − 1))), from 1 to max.
int64_t InputLength(int64_t i, int64_t n, int64_t max_tokens) {
  if (n <= 1) return max_tokens;
  const double exponent = static_cast<double>(i) / static_cast<double>(n - 1);
  return std::clamp<int64_t>(
      std::llround(std::pow(static_cast<double>(max_tokens), exponent)), 1,
      max_tokens);
}

double Cosine(absl::Span<const float> a, absl::Span<const float> b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return dot / std::max(std::sqrt(aa * bb), 1e-300);
}

// One packed batch of inputs.
struct Batch {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets = {0};
};

std::vector<Batch> MakeBatches(const ModelConfig& config,
                               const AgreementOptions& options) {
  const int64_t longest = std::max<int64_t>(
      1, std::min(options.max_tokens, config.max_sequence_length));
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int32_t> token(
      0, static_cast<int32_t>(config.vocab_size - 1));
  std::vector<Batch> batches(1);
  for (int64_t i = 0; i < options.num_inputs; ++i) {
    const int64_t length = InputLength(i, options.num_inputs, longest);
    if (batches.back().ids.size() + length >
            static_cast<size_t>(options.batch_tokens) &&
        !batches.back().ids.empty()) {
      batches.emplace_back();
    }
    Batch& batch = batches.back();
    for (int64_t t = 0; t < length; ++t) batch.ids.push_back(token(rng));
    batch.offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  return batches;
}

// Embeds `batch` with `model`, pooled (mean pooling for a model whose
// default is none), adding the wall time to `seconds`.
absl::StatusOr<Embeddings> TimedEmbed(const Model& model, const Batch& batch,
                                      double& seconds) {
  EmbedOptions pooled;
  if (model.config().pooling == Pooling::kNone) pooled.pooling = Pooling::kMean;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Embeddings> out =
      model.Embed(batch.ids, batch.offsets, pooled);
  seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return out;
}

}  // namespace

absl::StatusOr<Agreement> CompareEmbeddings(const Model& reference,
                                            const Model& candidate,
                                            const AgreementOptions& options) {
  const ModelConfig& config = reference.config();
  if (candidate.config().vocab_size != config.vocab_size ||
      candidate.config().hidden_size != config.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models '", reference.name(), "' and '", candidate.name(),
        "' differ in vocabulary or hidden size; they cannot be compared"));
  }
  Agreement agreement;
  agreement.min_cosine = 2;
  double sum = 0;
  for (const Batch& batch : MakeBatches(config, options)) {
    ASSIGN_OR_RETURN(const Embeddings want,
                     TimedEmbed(reference, batch, agreement.reference_seconds));
    ASSIGN_OR_RETURN(const Embeddings got,
                     TimedEmbed(candidate, batch, agreement.candidate_seconds));
    for (int64_t s = 0; s < want.num_rows(); ++s) {
      const double cosine = Cosine(got.Row(s), want.Row(s));
      sum += cosine;
      if (cosine < agreement.min_cosine) {
        agreement.min_cosine = cosine;
        agreement.min_cosine_length = batch.offsets[s + 1] - batch.offsets[s];
      }
    }
    agreement.num_inputs += want.num_rows();
    agreement.num_tokens += static_cast<int64_t>(batch.ids.size());
  }
  agreement.mean_cosine =
      sum / static_cast<double>(std::max<int64_t>(1, agreement.num_inputs));
  return agreement;
}

}  // namespace favor::model
