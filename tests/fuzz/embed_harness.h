// What the Embed and EmbedStream fuzz targets share: an Embed request taken
// through the service's own edge checks and input preparation
// (server/service/embed_validation.h, embed_inputs.h), as
// FavorService::StartEmbed and PrepareEmbed take it, against a small model
// description with a WordPiece tokenizer, without a server or a model.
#ifndef FAVOR_TESTS_FUZZ_EMBED_HARNESS_H_
#define FAVOR_TESTS_FUZZ_EMBED_HARNESS_H_

#include "absl/status/status.h"
#include "favor/v1/favor.pb.h"

namespace favor::fuzz {

// The request's status; aborts when an accepted request's prepared inputs
// break what the batcher relies on (ids in the vocabulary, sequences within
// the model's length, spans inside their token ids). A request naming the
// model "ids-only" goes to a model without a tokenizer.
absl::Status CheckAndPrepareEmbed(const v1::EmbedRequest& request);

}  // namespace favor::fuzz

#endif  // FAVOR_TESTS_FUZZ_EMBED_HARNESS_H_
