#include "server/service/embed_runner.h"

#include <exception>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"
#include "server/service/span_pooling.h"

namespace favor::service {
namespace {

bool WantsTokenVectors(const EmbedWork& work) {
  return work.include_token_embeddings || !work.spans.empty();
}

// Sequence `s` of `out` into `work`: its pooled row (unless `pooling` is
// kNone) and what it wants of its token vectors.
void WriteSequence(const model::Embeddings& out, int64_t s,
                   model::Pooling pooling, EmbedWork* work) {
  const bool pooled = pooling != model::Pooling::kNone;
  const std::vector<float>& values = pooled ? out.token_vectors : out.values;
  const std::vector<int64_t>& offsets =
      pooled ? out.token_row_offsets : out.row_offsets;
  if (pooled) {
    work->pooled.assign(out.values.begin() + out.row_offsets[s] * out.dim,
                        out.values.begin() + out.row_offsets[s + 1] * out.dim);
  }
  if (!WantsTokenVectors(*work)) return;
  const auto rows = absl::MakeConstSpan(values).subspan(
      offsets[s] * out.dim, (offsets[s + 1] - offsets[s]) * out.dim);
  if (work->include_token_embeddings) {
    work->token_rows.assign(rows.begin(), rows.end());
    work->num_token_rows = offsets[s + 1] - offsets[s];
  }
  if (!work->spans.empty()) {
    work->span_means = MeanOfSpans(rows, out.dim, work->spans);
  }
}

}  // namespace

// Requests of one batch that one Embed call serves.
struct EmbedRunner::Group {
  model::Pooling pooling = model::Pooling::kMean;
  bool token_vectors = false;
  std::vector<EmbedWork*> works;
  std::vector<batching::Request*> requests;
};

EmbedRunner::EmbedRunner(const model::Model* model, batching::Clock* clock)
    : model_(model), clock_(clock) {}

absl::Status EmbedRunner::RunGroup(const Group& group) const {
  std::vector<int32_t> token_ids;
  std::vector<int64_t> offsets = {0};
  for (const EmbedWork* work : group.works) {
    token_ids.insert(token_ids.end(), work->token_ids.begin(),
                     work->token_ids.end());
    offsets.push_back(static_cast<int64_t>(token_ids.size()));
  }
  model::EmbedOptions options;
  options.pooling = group.pooling;
  options.normalize = false;
  options.include_token_vectors = group.token_vectors;
  ASSIGN_OR_RETURN(model::Embeddings out,
                   model_->Embed(token_ids, offsets, options));
  if (out.num_sequences() != static_cast<int64_t>(group.works.size())) {
    return absl::InternalError(
        absl::StrCat("model returned ", out.num_sequences(), " sequences for ",
                     group.works.size()));
  }
  for (size_t s = 0; s < group.works.size(); ++s) {
    WriteSequence(out, static_cast<int64_t>(s), group.pooling, group.works[s]);
  }
  return absl::OkStatus();
}

absl::Status EmbedRunner::RunJobs(
    int /*worker_index*/, absl::Span<batching::Job<EmbedWork>* const> jobs) {
  const absl::Time start = clock_->Now();
  // One pass per pooling: it returns the token vectors as well when any of
  // its requests wants them, and each request takes what it asked for.
  std::map<int, Group> groups;
  for (batching::Job<EmbedWork>* job : jobs) {
    EmbedWork& work = job->work();
    work.queue_time = start - job->enqueue_time;
    Group& group = groups[static_cast<int>(work.pooling)];
    group.pooling = work.pooling;
    group.token_vectors = group.token_vectors || WantsTokenVectors(work);
    group.works.push_back(&work);
    group.requests.push_back(job);
  }
  for (auto& [key, group] : groups) {
    absl::Status status;
    try {
      status = RunGroup(group);
    } catch (const std::exception& e) {
      status =
          absl::InternalError(absl::StrCat("embedding failed: ", e.what()));
    }
    if (!status.ok()) {
      LOG(ERROR) << "model=" << model_->name() << " batch of "
                 << group.works.size() << " sequences failed: " << status;
      for (batching::Request* request : group.requests) {
        request->Complete(status);
      }
    }
  }
  const absl::Duration compute_time = clock_->Now() - start;
  for (batching::Job<EmbedWork>* job : jobs) {
    job->work().compute_time = compute_time;
  }
  return absl::OkStatus();
}

}  // namespace favor::service
