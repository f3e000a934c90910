#include "server/service/server_timing.h"

#include <algorithm>

namespace favor::service {

void MergeServerTiming(absl::Duration queue, absl::Duration compute,
                       v1::ServerTiming* timing) {
  timing->set_queue_time_micros(
      std::max(timing->queue_time_micros(), absl::ToInt64Microseconds(queue)));
  timing->set_compute_time_micros(std::max(timing->compute_time_micros(),
                                           absl::ToInt64Microseconds(compute)));
}

}  // namespace favor::service
