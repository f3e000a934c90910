// OpenAI's embeddings API as Favor's Embed call, and back: nothing but
// translation (the service validates, batches and computes).
//
// Request: `input` is a string, an array of strings, an array of token ids
// or an array of arrays of token ids (each text or token list one
// EmbedInput); `model` empty means the default model; `encoding_format` is
// "float" (default) or "base64"; `dimensions` becomes
// EmbedRequest.dimensions; `user` is ignored. What OpenAI itself refuses
// (an empty input, an empty string, mixed arrays, a token id that is not a
// non-negative integer, an unknown field) is INVALID_ARGUMENT here with the
// field as its param (api_errors.h); the rest is the service's to judge.
//
// Favor's and other servers' extensions (docs/http.md): `embedding_types`
// (EmbedRequest.embedding_types, by Cohere's names), `truncate` and
// `truncation_direction` (text-embeddings-inference's; TRUNCATION_RIGHT or
// _LEFT, else TRUNCATION_NONE), and `late_chunking` (Jina's: the strings of
// `input` are consecutive chunks of one document, embedded as one text input
// joined by single spaces, one span per chunk; two strings at least, and
// neither token ids nor `truncate`).
//
// Response: {"object":"list","data":[{"object":"embedding","index":i,
// "embedding":[...] or "<base64>"}],"model":...,"usage":{"prompt_tokens":n,
// "total_tokens":n},"inputs":[{"index":i,"tokens":n,"truncated_tokens":d}]},
// base64 being the little-endian float32 bytes. With `embedding_types`,
// each data[i] also has "embeddings": {"<type>": [...] or "<base64>"}, and
// "embedding" only when "float" is one of them. With `late_chunking`,
// data[i] and inputs[i] are chunk i's (its span's embedding and tokens).
#ifndef FAVOR_SERVER_HTTP_OPENAI_EMBEDDINGS_H_
#define FAVOR_SERVER_HTTP_OPENAI_EMBEDDINGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "favor/v1/favor.pb.h"
#include "server/http/json_codec.h"

namespace favor::http {

struct EmbeddingsCall {
  v1::EmbedRequest request;
  bool base64 = false;
  // Answer the spans of the one input, not the inputs.
  bool late_chunking = false;
};

// `json` within EmbeddingsBodyLimits(limits) (json_codec.h), then parsed.
absl::StatusOr<EmbeddingsCall> ParseEmbeddingsRequest(absl::string_view json,
                                                      const CallLimits& limits);

// `response` to `call` in OpenAI's shape, with the extensions above.
std::string EmbeddingsResponseJson(const v1::EmbedResponse& response,
                                   const EmbeddingsCall& call);

// GET /v1/models: {"object":"list","data":[{"id","object":"model",
// "created":0,"owned_by":"favor"}]}.
std::string ModelListJson(const v1::ListModelsResponse& response);
// GET /v1/models/{model}: {"id","object":"model","created":0,
// "owned_by":"favor"}.
std::string ModelJson(const v1::ModelInfo& model);

}  // namespace favor::http

#endif  // FAVOR_SERVER_HTTP_OPENAI_EMBEDDINGS_H_
