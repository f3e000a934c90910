#include "server/service/embed_gather.h"

#include <utility>

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
  if (cancel) {
    cancellation_->Cancel();
    batcher_->NotifyCancelled();
  }
  Release(1);
}

void EmbedGather::Release(int count) {
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
  embedding->mutable_values()->Add(work.pooled.begin(), work.pooled.end());
  if (options_.include_token_embeddings) {
    v1::Tensor* tensor = embedding->mutable_token_embeddings();
    tensor->add_shape(work.num_token_rows);
    tensor->add_shape(dim_);
    tensor->set_dtype(options_.token_embeddings_dtype);
    EncodeFloats(work.token_rows, options_.token_embeddings_dtype,
                 tensor->mutable_data());
  }
  MergeServerTiming(work.queue_time, work.compute_time,
                    response_->mutable_timing());
}

}  // namespace favor::service
