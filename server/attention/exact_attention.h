// Exact softmax attention over head groups, in tiles with an online softmax
// (running max and sum per query), so memory is O(tile²) however long the
// sequence. Implementation detail of server/attention.
#ifndef FAVOR_SERVER_ATTENTION_EXACT_ATTENTION_H_
#define FAVOR_SERVER_ATTENTION_EXACT_ATTENTION_H_

#include <vector>

#include "server/attention/attention.h"
#include "server/attention/head_group.h"

namespace favor::attention {

// Computes every group's output in place. May throw c10::Error.
void RunExactAttention(const AttentionOptions& options,
                       const std::vector<HeadGroup>& groups);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_EXACT_ATTENTION_H_
