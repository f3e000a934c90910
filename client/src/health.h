// grpc.health.v1.Health/Check on the wire, without the health proto: its
// two messages are tiny (a string field; an enum field), so they are
// written and read by hand and sent through a generic stub. This keeps a
// second copy of grpc.health.v1 descriptors out of programs that also link
// a server.
#ifndef FAVOR_CLIENT_SRC_HEALTH_H_
#define FAVOR_CLIENT_SRC_HEALTH_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "favor/client.h"
#include "grpcpp/support/byte_buffer.h"

namespace favor::client_internal {

inline constexpr char kHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

// A HealthCheckRequest{service: `service`}.
grpc::ByteBuffer HealthCheckRequest(absl::string_view service);

// The status of a HealthCheckResponse; INTERNAL when it does not parse.
absl::StatusOr<ServingStatus> ParseHealthCheckResponse(
    const grpc::ByteBuffer& response);

}  // namespace favor::client_internal

#endif  // FAVOR_CLIENT_SRC_HEALTH_H_
