// From ClientOptions to gRPC channels: which targets the endpoints become,
// with which credentials and channel arguments.
#ifndef FAVOR_CLIENT_SRC_CHANNELS_H_
#define FAVOR_CLIENT_SRC_CHANNELS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "favor/client_options.h"
#include "grpcpp/channel.h"

namespace favor::client_internal {

// The gRPC targets of `endpoints`, one per channel to make. One endpoint is
// used as given. Several IP-literal "host:port" endpoints are merged into
// one "ipv4:a,b" (and one "ipv6:[a]:p,...") target that gRPC's round_robin
// policy balances; any other endpoint keeps a target (and a channel) of its
// own. INVALID_ARGUMENT when there is no endpoint or an empty one.
absl::StatusOr<std::vector<std::string>> TargetsFor(
    const std::vector<std::string>& endpoints);

// OK, or INVALID_ARGUMENT naming the first bad field of `options`.
absl::Status ValidateOptions(const ClientOptions& options);

// The channels of `options` (which must be valid), one per target, each
// with the round_robin policy.
std::vector<std::shared_ptr<grpc::Channel>> MakeChannels(
    const ClientOptions& options, const std::vector<std::string>& targets);

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_CHANNELS_H_
