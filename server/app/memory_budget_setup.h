// favor-server's memory budget from its flag (main.cc wires it; the formula
// and the measured peaks are in docs/performance.md, "The memory budget").
#ifndef FAVOR_SERVER_APP_MEMORY_BUDGET_SETUP_H_
#define FAVOR_SERVER_APP_MEMORY_BUDGET_SETUP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "server/batching/memory_budget.h"
#include "server/metrics/metrics.h"
#include "server/model/model.h"

namespace favor {

// --max_memory_bytes=-1 (the default) takes this share of what the process
// may use: the smaller of the machine's memory and the cgroup's limit
// (memory_info.h). The rest is left to the kernel, the page cache and
// whatever else runs beside the server.
inline constexpr int kDefaultMemoryBudgetPercent = 80;

struct MemoryBudgetSetup {
  // --max_memory_bytes: -1 the default share above, 0 no budget, > 0 bytes.
  int64_t max_memory_bytes = -1;
  // Freed blocks the huge-page CPU allocator may keep (0 without it):
  // resident however little runs, so counted once.
  int64_t allocator_cache_bytes = 0;
};

// The budget, after the models are loaded: what the process holds now
// (VmRSS: weights, libraries) plus the allocator's cache is counted once,
// the rest is for batches. Null with no budget. INVALID_ARGUMENT when the
// budget leaves nothing for batches, naming the numbers. Publishes the
// budget on `metrics` and keeps favor_memory_reserved_bytes up to date;
// `metrics` must outlive the budget. Logs event=memory_budget.
absl::StatusOr<std::unique_ptr<batching::MemoryBudget>> StartMemoryBudget(
    const MemoryBudgetSetup& setup, metrics::Metrics* metrics);

// Logs each model's estimates (event=memory_estimate): the bytes one input
// of 4k, 8k, ... 1M tokens adds to a batch ("tokens:bytes,..."), and a
// batch's overhead.
void LogMemoryEstimates(const std::vector<const model::Model*>& models);

}  // namespace favor

#endif  // FAVOR_SERVER_APP_MEMORY_BUDGET_SETUP_H_
