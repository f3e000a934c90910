#include "server/service/embed_runner.h"

#include <exception>
#include <map>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/status_macros.h"

namespace favor::service {

// Requests of one batch that share their options.
struct EmbedRunner::Group {
  model::EmbedOptions options;
  bool wants_pooled = false;
  std::vector<EmbedWork*> works;
};

EmbedRunner::EmbedRunner(const model::Model* model, batching::Clock* clock)
    : model_(model), clock_(clock) {}

absl::Status EmbedRunner::RunGroup(const Group& group, bool pooled) const {
  std::vector<EmbedWork*> works;
  for (EmbedWork* work : group.works) {
    if (pooled || work->include_token_embeddings) works.push_back(work);
  }
  if (works.empty()) return absl::OkStatus();
  std::vector<int32_t> token_ids;
  std::vector<int64_t> offsets = {0};
  for (const EmbedWork* work : works) {
    token_ids.insert(token_ids.end(), work->token_ids.begin(),
                     work->token_ids.end());
    offsets.push_back(static_cast<int64_t>(token_ids.size()));
  }
  model::EmbedOptions options = group.options;
  if (!pooled) options.pooling = model::Pooling::kNone;
  ASSIGN_OR_RETURN(model::Embeddings out,
                   model_->Embed(token_ids, offsets, options));
  if (out.num_sequences() != static_cast<int64_t>(works.size())) {
    return absl::InternalError(absl::StrCat("model returned ",
                                            out.num_sequences(),
                                            " sequences for ", works.size()));
  }
  for (size_t s = 0; s < works.size(); ++s) {
    const int64_t begin = out.row_offsets[s] * out.dim;
    const int64_t end = out.row_offsets[s + 1] * out.dim;
    EmbedWork* work = works[s];
    std::vector<float>& target = pooled ? work->pooled : work->token_rows;
    target.assign(out.values.begin() + begin, out.values.begin() + end);
    if (!pooled)
      work->num_token_rows = out.row_offsets[s + 1] - out.row_offsets[s];
  }
  return absl::OkStatus();
}

absl::Status EmbedRunner::RunBatch(int worker_index, batching::Batch* batch) {
  const absl::Time start = clock_->Now();
  // Key: (pooling, normalize); kNone requests go with their normalisation.
  std::map<std::tuple<int, bool>, Group> groups;
  std::map<std::tuple<int, bool>, std::vector<batching::Request*>> members;
  for (auto& request : batch->requests) {
    auto* work = static_cast<EmbedWork*>(request->payload.get());
    work->queue_time = start - request->enqueue_time;
    const auto key =
        std::make_tuple(static_cast<int>(work->pooling), work->normalize);
    Group& group = groups[key];
    group.options.pooling = work->pooling;
    group.options.normalize = work->normalize;
    group.wants_pooled = work->pooling != model::Pooling::kNone;
    group.works.push_back(work);
    members[key].push_back(request.get());
  }
  for (auto& [key, group] : groups) {
    absl::Status status;
    try {
      if (group.wants_pooled) status = RunGroup(group, /*pooled=*/true);
      if (status.ok()) status = RunGroup(group, /*pooled=*/false);
    } catch (const std::exception& e) {
      status =
          absl::InternalError(absl::StrCat("embedding failed: ", e.what()));
    }
    if (!status.ok()) {
      LOG(ERROR) << "model=" << model_->name() << " batch of "
                 << group.works.size() << " sequences failed: " << status;
      for (batching::Request* request : members[key]) request->Complete(status);
    }
  }
  const absl::Duration compute_time = clock_->Now() - start;
  for (auto& request : batch->requests) {
    static_cast<EmbedWork*>(request->payload.get())->compute_time =
        compute_time;
  }
  return absl::OkStatus();
}

}  // namespace favor::service
