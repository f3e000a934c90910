// One Embed call (or EmbedStream message) on its way through its model's
// batcher, once checked and its inputs made (embed_inputs.h): each input,
// or each window of a TRUNCATION_CHUNK input, becomes a batching::Job of
// its own, so that inputs batch with other calls' inputs; the call's
// EmbedGather (embed_gather.h) collects their answers, through a
// ChunkGather (chunk_gather.h) for windows, and answers the call once.
//
// The inputs are enqueued inside one Batcher::EnqueueGroup, so that an idle
// worker takes the call's inputs together. When the batcher refuses one,
// that refusal answers the call and the inputs after it are never enqueued;
// the call's queued inputs are dropped (its cancellation flag).
#ifndef FAVOR_SERVER_SERVICE_EMBED_CALL_H_
#define FAVOR_SERVER_SERVICE_EMBED_CALL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "favor/v1/favor.pb.h"
#include "server/batching/request.h"
#include "server/metrics/metrics.h"
#include "server/service/embed_inputs.h"
#include "server/service/embed_validation.h"
#include "server/service/model_registry.h"

namespace favor::service {

// An Embed call resolved to a model revision and checked.
struct PreparedEmbed {
  // The revision the call holds until it is answered.
  ModelRegistry::Lease entry;
  // Made by PrepareEmbedInputs (on a tokenizer thread for text).
  std::vector<PreparedInput> inputs;
  ResolvedEmbedOptions options;
  batching::Priority priority = batching::Priority::kNormal;
  // AnswerBytesBound before tokenising (embed_validation.h).
  int64_t answer_bytes_bound = 0;
};

// Enqueues `call`'s inputs into its model's batcher; `done` runs exactly
// once, with OK when every input's answer is written into `response` (one
// Embedding per input, made by the caller), else with the first failure.
// A call whose inputs could never be queued together is answered
// RESOURCE_EXHAUSTED without a retry hint. `response` must live until
// `done` runs; `metrics` (not null) outlives the call.
void EnqueueEmbed(PreparedEmbed call, absl::Time deadline,
                  std::shared_ptr<batching::CancellationFlag> cancellation,
                  absl::AnyInvocable<void(absl::Status)> done,
                  v1::EmbedResponse* response, metrics::Metrics* metrics);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_EMBED_CALL_H_
