// Fuzz target: one EmbedStream message as the bytes gRPC hands the service,
// parsed as favor.v1.EmbedStreamRequest, checked as EmbedStreamCall checks
// it (CheckEmbedStreamMessage), then its request as an Embed request
// (embed_harness.h). Structure-aware (proto_mutator.h).
#include <cstddef>
#include <cstdint>

#include "favor/v1/favor.pb.h"
#include "server/service/embed_validation.h"
#include "tests/fuzz/embed_harness.h"
#include "tests/fuzz/proto_mutator.h"

FAVOR_FUZZ_PROTO_MUTATOR(favor::v1::EmbedStreamRequest)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  favor::v1::EmbedStreamRequest message;
  if (!message.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (!favor::service::CheckEmbedStreamMessage(message).ok()) return 0;
  (void)favor::fuzz::CheckAndPrepareEmbed(message.request());
  return 0;
}
