#include "server/service/embed_call.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/batching/batcher.h"
#include "server/batching/job.h"
#include "server/model/memory_estimate.h"
#include "server/service/chunk_gather.h"
#include "server/service/embed_gather.h"
#include "server/service/embed_runner.h"

namespace favor::service {
namespace {

// A call whose inputs (windows, with TRUNCATION_CHUNK) outnumber, or whose
// tokens outweigh, the whole queue could only ever fill it with its own
// inputs and be refused: RESOURCE_EXHAUSTED without a retry hint (HTTP
// 413), not a hint that sends clients back to be refused forever. The
// message ends as the batcher's for a request over the memory budget, "it
// can never run here", which favor's client library does not retry.
absl::Status CheckCallFitsTheQueue(const std::vector<PreparedInput>& inputs,
                                   const batching::Batcher::Options& queue) {
  int64_t requests = 0;
  int64_t tokens = 0;
  for (const PreparedInput& input : inputs) {
    requests += std::max<int64_t>(input.num_windows(), 1);
    tokens += static_cast<int64_t>(input.token_ids.size());
  }
  if (requests <= queue.max_queue_requests &&
      tokens <= queue.max_queue_tokens) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "the call's ", requests, " inputs (windows counted) of ", tokens,
      " tokens can never be queued together for model '", queue.model_name,
      "' (max_queue_requests=", queue.max_queue_requests, ", max_queue_tokens=",
      queue.max_queue_tokens,
      "): send fewer or shorter inputs per call; as sent, it can never run "
      "here"));
}

// What every job of one call shares.
class CallEnqueuer {
 public:
  CallEnqueuer(const PreparedEmbed& call, absl::Time deadline,
               std::shared_ptr<batching::CancellationFlag> cancellation,
               std::shared_ptr<EmbedGather> gather, metrics::Metrics* metrics)
      : call_(call),
        deadline_(deadline),
        cancellation_(std::move(cancellation)),
        gather_(std::move(gather)),
        metrics_(metrics) {}

  // Enqueues input `index`, or its windows (ChunkGather pools them); false
  // when the batcher refused one, whose answer then reached the gather.
  bool Input(PreparedInput input, int index) const {
    return input.window_offsets.empty() ? Whole(std::move(input), index)
                                        : Windows(input, index);
  }

 private:
  bool Whole(PreparedInput input, int index) const {
    auto work = std::make_shared<EmbedWork>();
    work->token_ids = std::move(input.token_ids);
    work->spans = std::move(input.spans);
    return EnqueueJob(
        std::move(work),
        [gather = gather_, index](const EmbedWork& done, absl::Status status) {
          gather->InputDone(index, done, status);
        });
  }

  bool Windows(const PreparedInput& input, int index) const {
    const int num_windows = static_cast<int>(input.num_windows());
    std::vector<int64_t> sizes(num_windows);
    for (int w = 0; w < num_windows; ++w) {
      sizes[w] = input.window_offsets[w + 1] - input.window_offsets[w];
    }
    auto chunks = std::make_shared<ChunkGather>(
        gather_, index, std::move(sizes), call_.options.pooling);
    for (int w = 0; w < num_windows; ++w) {
      auto work = std::make_shared<EmbedWork>();
      work->token_ids.assign(
          input.token_ids.begin() + input.window_offsets[w],
          input.token_ids.begin() + input.window_offsets[w + 1]);
      if (!EnqueueJob(std::move(work),
                      [chunks, w](const EmbedWork& done, absl::Status status) {
                        chunks->WindowDone(w, done, status);
                      })) {
        chunks->Release(num_windows - w - 1);
        return false;
      }
    }
    return true;
  }

  // Enqueues one input's (or window's) work; false when the batcher
  // refused it (and so answered `on_done`).
  bool EnqueueJob(
      std::shared_ptr<EmbedWork> work,
      absl::AnyInvocable<void(const EmbedWork&, absl::Status)> on_done) const {
    const ModelRegistry::Lease& entry = call_.entry;
    work->pooling = call_.options.pooling;
    work->include_token_embeddings = call_.options.include_token_embeddings;
    // The job holds `entry` until it is answered, so that a reload frees
    // this revision of the model only after the calls it accepted.
    auto job = std::make_unique<batching::Job<EmbedWork>>(
        work, [entry, work, on_done = std::move(on_done)](
                  absl::Status status) mutable { on_done(*work, status); });
    job->num_tokens = static_cast<int64_t>(work->token_ids.size());
    job->memory_bytes = model::EstimateInputMemoryBytes(
        entry->model->description().memory, job->num_tokens,
        work->include_token_embeddings || !work->spans.empty() ||
            work->pooling == model::Pooling::kNone);
    job->priority = call_.priority;
    job->deadline = deadline_;
    job->cancellation = cancellation_;
    metrics_->RecordInputLength(entry->model->name(), job->num_tokens);
    return entry->batcher->Enqueue(std::move(job)).ok();
  }

  const PreparedEmbed& call_;
  const absl::Time deadline_;
  const std::shared_ptr<batching::CancellationFlag> cancellation_;
  const std::shared_ptr<EmbedGather> gather_;
  metrics::Metrics* const metrics_;
};

}  // namespace

void EnqueueEmbed(PreparedEmbed call, absl::Time deadline,
                  std::shared_ptr<batching::CancellationFlag> cancellation,
                  absl::AnyInvocable<void(absl::Status)> done,
                  v1::EmbedResponse* response, metrics::Metrics* metrics) {
  batching::Batcher* batcher = call.entry->batcher->batcher().get();
  absl::Status fits = CheckCallFitsTheQueue(call.inputs, batcher->options());
  if (!fits.ok()) return done(std::move(fits));
  const int num_inputs = static_cast<int>(call.inputs.size());
  auto gather = std::make_shared<EmbedGather>(
      std::move(done), cancellation, batcher, response, num_inputs,
      call.options, call.entry->model->description().embedding_dim);
  const CallEnqueuer enqueue(call, deadline, std::move(cancellation), gather,
                             metrics);
  // An idle worker takes the call's inputs together, not those queued so far.
  const batching::Batcher::EnqueueGroup group(batcher);
  for (int i = 0; i < num_inputs; ++i) {
    if (!enqueue.Input(std::move(call.inputs[i]), i)) {
      gather->Release(num_inputs - i - 1);
      break;
    }
  }
}

}  // namespace favor::service
