// Linear attention over head groups, for every kernel with a feature map.
// Implementation detail of server/attention (attention.h is the interface).
#ifndef FAVOR_SERVER_ATTENTION_LINEAR_ATTENTION_H_
#define FAVOR_SERVER_ATTENTION_LINEAR_ATTENTION_H_

#include <vector>

#include "server/attention/attention.h"
#include "server/attention/features.h"
#include "server/attention/head_group.h"

namespace favor::attention {

// Computes every group's output in place: on the CPU's intra-op threads
// when `parallel`, else in order on the calling thread. May throw c10::Error (the caller,
// attention.cc, is the adapter that turns it into a Status).
void RunLinearAttention(const FeatureContext& context,
                        const AttentionOptions& options,
                        const std::vector<HeadGroup>& groups, bool parallel);

}  // namespace favor::attention

#endif  // FAVOR_SERVER_ATTENTION_LINEAR_ATTENTION_H_
