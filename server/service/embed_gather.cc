#include "server/service/embed_gather.h"

#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "server/service/output_vectors.h"
#include "server/service/server_timing.h"
#include "server/service/tensor_codec.h"

namespace favor::service {

EmbedGather::EmbedGather(
    absl::AnyInvocable<void(absl::Status)> done,
    std::shared_ptr<batching::CancellationFlag> cancellation,
    batching::Batcher* batcher, v1::EmbedResponse* response, int num_inputs,
    const ResolvedEmbedOptions& options, int64_t dim)
    : done_(std::move(done)),
      cancellation_(std::move(cancellation)),
      batcher_(batcher),
      response_(response),
      options_(options),
      dim_(dim),
      remaining_(num_inputs) {}

void EmbedGather::InputDone(int index, const EmbedWork& work,
                            const absl::Status& status) {
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && status_.ok()) {
      status_ = status;
      cancel = true;
    } else if (status_.ok()) {
      Write(index, work);
    }
  }
  if (cancel) CancelTheRest();
  Release(1);
}

void EmbedGather::Fail(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = status;
  }
  CancelTheRest();
}

void EmbedGather::CancelTheRest() {
  cancellation_->Cancel();
  batcher_->NotifyCancelled();
}

void EmbedGather::Release(int count) {
  // Release(0) after the last input was refused must not answer again: the
  // call that takes the count to zero answers.
  if (count == 0) return;
  absl::Status answer;
  {
    absl::MutexLock lock(&mu_);
    remaining_ -= count;
    if (remaining_ > 0) return;
    answer = status_;
  }
  std::move(done_)(answer);
}

void EmbedGather::Write(int index, const EmbedWork& work) {
  v1::Embedding* embedding = response_->mutable_embeddings(index);
  if (!work.pooled.empty()) {
    const std::vector<float> values =
        FinishEmbedding(work.pooled, options_.dimensions, options_.normalize);
    const EmbeddingTypes& types = options_.embedding_types;
    if (types.float_values) {
      embedding->mutable_values()->Add(values.begin(), values.end());
    }
    if (types.any_quantized()) {
      Quantize(values, types, embedding->mutable_quantized());
    }
  }
  if (options_.include_token_embeddings) {
    std::vector<float> rows = work.token_rows;
    if (options_.normalize) NormalizeRows(dim_, &rows);
    v1::Tensor* tensor = embedding->mutable_token_embeddings();
    tensor->add_shape(work.num_token_rows);
    tensor->add_shape(dim_);
    tensor->set_dtype(options_.token_embeddings_dtype);
    EncodeFloats(rows, options_.token_embeddings_dtype, tensor->mutable_data());
  }
  for (size_t j = 0; j < work.spans.size(); ++j) {
    const std::vector<float> values = FinishEmbedding(
        absl::MakeConstSpan(work.span_means).subspan(j * dim_, dim_),
        options_.dimensions, options_.normalize);
    v1::SpanEmbedding* span = embedding->add_spans();
    if (options_.embedding_types.float_values) {
      span->mutable_values()->Add(values.begin(), values.end());
    }
    if (options_.embedding_types.any_quantized()) {
      Quantize(values, options_.embedding_types, span->mutable_quantized());
    }
    span->set_num_tokens(work.spans[j].size());
  }
  MergeServerTiming(work.queue_time, work.compute_time,
                    response_->mutable_timing());
}

}  // namespace favor::service
