// Fuzz target: an Embed request as the bytes gRPC hands the service, parsed
// as favor.v1.EmbedRequest and taken through the service's validation and
// input preparation (embed_harness.h) to a status. Structure-aware: the
// mutator (proto_mutator.h) keeps the bytes a valid message.
#include <cstddef>
#include <cstdint>

#include "favor/v1/favor.pb.h"
#include "tests/fuzz/embed_harness.h"
#include "tests/fuzz/proto_mutator.h"

FAVOR_FUZZ_PROTO_MUTATOR(favor::v1::EmbedRequest)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  favor::v1::EmbedRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)favor::fuzz::CheckAndPrepareEmbed(request);
  return 0;
}
