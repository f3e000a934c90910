#include "server/app/memory_budget_setup.h"

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "server/common/memory_info.h"
#include "server/common/status_macros.h"
#include "server/model/memory_estimate.h"

namespace favor {
namespace {

absl::StatusOr<int64_t> BudgetBytes(int64_t flag) {
  if (flag >= 0) return flag;
  ASSIGN_OR_RETURN(const int64_t available, AvailableMemoryBytes());
  return available / 100 * kDefaultMemoryBudgetPercent;
}

}  // namespace

absl::StatusOr<std::unique_ptr<batching::MemoryBudget>> StartMemoryBudget(
    const MemoryBudgetSetup& setup, metrics::Metrics* metrics) {
  ASSIGN_OR_RETURN(const int64_t max_bytes,
                   BudgetBytes(setup.max_memory_bytes));
  if (max_bytes == 0) {
    LOG(INFO) << "event=memory_budget max_memory_bytes=0 (none)";
    metrics->SetMemoryBudget(0, 0);
    return nullptr;
  }
  ASSIGN_OR_RETURN(const int64_t rss, ProcessMemoryBytes("VmRSS"));
  batching::MemoryBudget::Options options;
  options.max_bytes = max_bytes;
  options.resident_bytes = rss + setup.allocator_cache_bytes;
  options.on_change = [metrics](int64_t reserved) {
    metrics->SetMemoryReserved(reserved);
  };
  // A reload's weights come and go: the gauge follows them, so that it
  // shows the budget that refusals name.
  options.on_resident_change = [metrics, max_bytes](int64_t resident) {
    metrics->SetMemoryBudget(max_bytes, resident);
  };
  absl::StatusOr<std::unique_ptr<batching::MemoryBudget>> budget =
      batching::MemoryBudget::Create(std::move(options));
  if (!budget.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_memory_bytes: ", budget.status().message(), " (", rss,
        " resident after loading the models, ", setup.allocator_cache_bytes,
        " for the allocator's cache)"));
  }
  metrics->SetMemoryBudget(max_bytes, (*budget)->resident_bytes());
  LOG(INFO) << "event=memory_budget max_memory_bytes=" << max_bytes
            << " resident_bytes=" << rss
            << " allocator_cache_bytes=" << setup.allocator_cache_bytes
            << " batch_capacity_bytes=" << (*budget)->batch_capacity_bytes();
  return budget;
}

void LogMemoryEstimates(const std::vector<const model::Model*>& models) {
  for (const model::Model* model : models) {
    const model::MemoryProfile& profile = model->description().memory;
    std::string estimates;
    for (int64_t tokens = int64_t{1} << 12; tokens <= int64_t{1} << 20;
         tokens *= 2) {
      absl::StrAppend(&estimates, estimates.empty() ? "" : ",", tokens, ":",
                      model::EstimateInputMemoryBytes(profile, tokens, false));
    }
    LOG(INFO) << "event=memory_estimate model=" << model->name()
              << " input_bytes=" << estimates << " batch_overhead_bytes="
              << model::EstimateBatchOverheadBytes(profile);
  }
}

}  // namespace favor
