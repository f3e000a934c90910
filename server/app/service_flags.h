// favor-server's service and batching flags (service_flags.cc, beside
// main.cc: flags live next to main), copied into FavorService::Options.
#ifndef FAVOR_SERVER_APP_SERVICE_FLAGS_H_
#define FAVOR_SERVER_APP_SERVICE_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "server/service/favor_service.h"

namespace favor {

// INVALID_ARGUMENT naming the first service or batching flag out of its
// range (flag_range.h). Batcher::Options and FavorService::Options check
// their fields again, in their own words; this is what a user reads.
absl::Status CheckServiceFlagRanges();

// The service's options from the flags; Attend runs on `device` (--device).
service::FavorService::Options ServiceOptionsFromFlags(
    const std::string& device);

}  // namespace favor

#endif  // FAVOR_SERVER_APP_SERVICE_FLAGS_H_
