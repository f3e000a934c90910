// A unit of attention work: some heads of one sequence, as tensor views into
// the caller's Q, K, V and output. Implementation detail of server/attention.
#ifndef FAVOR_SERVER_ATTENTION_HEAD_GROUP_H_
#define FAVOR_SERVER_ATTENTION_HEAD_GROUP_H_

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "server/attention/features.h"
#include "server/attention/keep_mask.h"

namespace favor::attention {

struct HeadGroup {
  at::Tensor query;  // (G, Lq, d), any float dtype, rows may be strided
  at::Tensor key;    // (G, Lk, d)
  at::Tensor value;  // (G, Lk, dv)
  // Keys that take part, bool on the same device: (Lk) shared by the
  // group's rows, (G, Lk) one per row (sequences padded into one group), or
  // undefined: keep all.
  at::Tensor keep;
  at::Tensor out;    // (G, Lq, dv) view the result is written into
  // FAVOR++ only: the group's own feature map, chosen from its queries and
  // keys before any feature is computed (favor_plus_plus.h).
  LogitMap logits;
};

// A contiguous range [begin, end) of one group's tokens: the unit a CPU
// thread takes.
struct TokenRange {
  size_t group = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// Splits each group's `length(group)` tokens into `parts_of(tokens)` ranges
// of whole chunks (at least one, at most one per chunk), each group's
// number chosen from its own length alone. Ranges of a group come in token
// order.
template <typename LengthFn, typename PartsFn>
std::vector<TokenRange> SplitIntoParts(size_t num_groups, LengthFn length,
                                       int64_t chunk, PartsFn parts_of) {
  std::vector<TokenRange> ranges;
  for (size_t g = 0; g < num_groups; ++g) {
    const int64_t tokens = length(g);
    if (tokens == 0) continue;
    const int64_t chunks = (tokens + chunk - 1) / chunk;
    const int64_t parts =
        std::clamp<int64_t>(parts_of(tokens), int64_t{1}, chunks);
    const int64_t chunks_per_part = (chunks + parts - 1) / parts;
    for (int64_t begin = 0; begin < tokens; begin += chunks_per_part * chunk) {
      ranges.push_back(
          {g, begin, std::min(tokens, begin + chunks_per_part * chunk)});
    }
  }
  return ranges;
}

// Splits each group's `length(group)` tokens into ranges of whole chunks so
// that there are about `target_tasks` ranges in all (at least one per
// non-empty group). Ranges of a group come in token order.
template <typename LengthFn>
std::vector<TokenRange> SplitIntoRanges(size_t num_groups, LengthFn length,
                                        int64_t chunk, int64_t target_tasks) {
  const int64_t per_group = std::max<int64_t>(
      1, (target_tasks + static_cast<int64_t>(num_groups) - 1) /
             std::max<int64_t>(1, static_cast<int64_t>(num_groups)));
  return SplitIntoParts(num_groups, length, chunk,
                        [&](int64_t) { return per_group; });
}

// Runs f(i) for every i in [0, n): on CPU, on the intra-op threads, each
// thread taking the next index when it finishes one, so that a thread that
// is slowed down (another process on its core) does not hold back the rest
// as a static split would; elsewhere (`parallel` false), in order, inline.
template <typename Fn>
void ForEachTask(int64_t n, bool parallel, Fn&& f) {
  if (!parallel || n <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<int64_t> next{0};
  const int64_t workers =
      std::min<int64_t>(n, static_cast<int64_t>(at::get_num_threads()));
  // The caller's LibTorch thread-local state (inference mode, grad mode)
  // travels to the worker threads.
  const at::ThreadLocalState caller_state;
  at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
    const at::ThreadLocalStateGuard guard(caller_state);
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) f(i);
  });
}

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_HEAD_GROUP_H_
