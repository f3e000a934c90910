// The ServerTiming of a response: where the server spent a call's time.
#ifndef FAVOR_SERVER_SERVICE_SERVER_TIMING_H_
#define FAVOR_SERVER_SERVICE_SERVER_TIMING_H_

#include "absl/time/time.h"
#include "favor/v1/favor.pb.h"

namespace favor::service {

// Raises `timing`'s queue and compute times to `queue` and `compute` where
// they are longer: a call of several inputs reports its slowest input's.
void MergeServerTiming(absl::Duration queue, absl::Duration compute,
                       v1::ServerTiming* timing);

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_SERVER_TIMING_H_
