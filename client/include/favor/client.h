// favor::Client: the C++ client of a Favor server (favor.v1.Favor and
// grpc.health.v1.Health). CMake: find_package(favor_client) and link
// favor::client. It needs gRPC, protobuf and abseil, never LibTorch, and its
// public types are plain C++ (favor/embed.h, favor/tokenize.h,
// favor/attend.h, favor/model_info.h, favor/tensor.h): no protobuf type
// appears here.
//
//   favor::ClientOptions options;
//   options.endpoints = {"localhost:50051"};
//   auto client = favor::Client::Create(options);
//   if (!client.ok()) return client.status();
//   absl::StatusOr<favor::EmbedResult> result =
//       (*client)->Embed({"Hello, world!", "Another text"});
//   // result->embeddings[i].values: the pooled embedding of input i.
//   // Token ids work too, for models with or without a tokenizer:
//   result = (*client)->Embed({{101, 7592, 2088, 102}, {101, 2088, 102}});
//
// Every call comes in three forms that behave alike: blocking (`Embed`),
// with a callback (`EmbedAsync`), and with a future (`EmbedFuture`). Every
// call has a deadline (CallOptions, else ClientOptions.default_timeout) that
// covers retries. Failures are absl::Status with the server's gRPC code and
// message (abseil's codes are gRPC's codes); a call that ran out of time is
// DEADLINE_EXCEEDED, one the server could not be reached for UNAVAILABLE.
// Calls failing with UNAVAILABLE or RESOURCE_EXHAUSTED are retried with
// exponential backoff and jitter, honouring the server's `retry-after-ms`
// hint (RetryOptions in favor/client_options.h); no other code is retried.
//
// A Client is thread-safe: share one between threads (it holds the
// connections; making one per call wastes them). Calls are spread
// round-robin over the endpoints' addresses.
#ifndef FAVOR_CLIENT_INCLUDE_FAVOR_CLIENT_H_
#define FAVOR_CLIENT_INCLUDE_FAVOR_CLIENT_H_

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "favor/attend.h"
#include "favor/call_options.h"
#include "favor/client_options.h"
#include "favor/embed.h"
#include "favor/embed_streamer.h"
#include "favor/model_info.h"
#include "favor/tensor.h"
#include "favor/tokenize.h"

namespace favor {

// A server's health as grpc.health.v1.Health reports it.
enum class ServingStatus {
  kUnknown = 0,
  kServing = 1,
  kNotServing = 2,
};

// "UNKNOWN", "SERVING" or "NOT_SERVING".
const char* ServingStatusName(ServingStatus status);

class Client {
 public:
  // A client of the servers in `options.endpoints`. Fails with
  // INVALID_ARGUMENT on bad options (no endpoint, an empty one, a client
  // certificate without its key, max_attempts < 1, ...). Connecting is lazy:
  // an unreachable server shows up as UNAVAILABLE on the first call, not
  // here.
  static absl::StatusOr<std::unique_ptr<Client>> Create(
      const ClientOptions& options);

  // Cancels the asynchronous calls still in flight (their callbacks run
  // with CANCELLED) and waits for their callbacks to return. Every
  // EmbedStreamer opened by this client must be destroyed first, and a
  // client must not be destroyed from one of its own callbacks.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Embed: the embeddings of `inputs` (at least one) with one model, in
  // input order. The inputs are copied before any form returns. Inputs are
  // texts or token ids, with spans (EmbedInput); the TokenIds overloads
  // take plain id sequences. A text that is not valid UTF-8 fails the call
  // here (INVALID_ARGUMENT, nothing sent).
  absl::StatusOr<EmbedResult> Embed(absl::Span<const EmbedInput> inputs,
                                    const EmbedOptions& options = {},
                                    const CallOptions& call = {});
  void EmbedAsync(absl::Span<const EmbedInput> inputs,
                  const EmbedOptions& options, const CallOptions& call,
                  Callback<EmbedResult> done);
  std::future<absl::StatusOr<EmbedResult>> EmbedFuture(
      absl::Span<const EmbedInput> inputs, const EmbedOptions& options = {},
      const CallOptions& call = {});
  absl::StatusOr<EmbedResult> Embed(absl::Span<const TokenIds> inputs,
                                    const EmbedOptions& options = {},
                                    const CallOptions& call = {});
  void EmbedAsync(absl::Span<const TokenIds> inputs,
                  const EmbedOptions& options, const CallOptions& call,
                  Callback<EmbedResult> done);
  std::future<absl::StatusOr<EmbedResult>> EmbedFuture(
      absl::Span<const TokenIds> inputs, const EmbedOptions& options = {},
      const CallOptions& call = {});

  // Tokenize: `texts` (at least one) split into the model's tokens, as
  // Embed would read them. FAILED_PRECONDITION for a model without a
  // tokenizer; the limits of EmbedInput::text apply, and a text that is not
  // valid UTF-8 fails the call here.
  absl::StatusOr<TokenizeResult> Tokenize(absl::Span<const std::string> texts,
                                          const TokenizeOptions& options = {},
                                          const CallOptions& call = {});
  void TokenizeAsync(absl::Span<const std::string> texts,
                     const TokenizeOptions& options, const CallOptions& call,
                     Callback<TokenizeResult> done);
  std::future<absl::StatusOr<TokenizeResult>> TokenizeFuture(
      absl::Span<const std::string> texts, const TokenizeOptions& options = {},
      const CallOptions& call = {});

  // Opens an EmbedStream (favor/embed_streamer.h) for many Embed calls in
  // flight at once. Fails only on bad options (INVALID_ARGUMENT); a server
  // that cannot be reached shows up in the answers and in Finish().
  absl::StatusOr<std::unique_ptr<EmbedStreamer>> OpenEmbedStream(
      const EmbedStreamOptions& options = {});

  // Attend: one multi-head attention on raw tensors. The request's tensors
  // are checked here with Tensor::Validate (INVALID_ARGUMENT, nothing sent)
  // and then copied.
  absl::StatusOr<AttendResult> Attend(const AttendRequest& request,
                                      const CallOptions& call = {});
  void AttendAsync(const AttendRequest& request, const CallOptions& call,
                   Callback<AttendResult> done);
  std::future<absl::StatusOr<AttendResult>> AttendFuture(
      const AttendRequest& request, const CallOptions& call = {});

  // ListModels: every model the server has loaded.
  absl::StatusOr<ModelList> ListModels(const CallOptions& call = {});
  void ListModelsAsync(const CallOptions& call, Callback<ModelList> done);
  std::future<absl::StatusOr<ModelList>> ListModelsFuture(
      const CallOptions& call = {});

  // GetModel: one model by name; empty means the default model. NOT_FOUND
  // when the server has no such model.
  absl::StatusOr<ModelInfo> GetModel(absl::string_view model = "",
                                     const CallOptions& call = {});
  void GetModelAsync(absl::string_view model, const CallOptions& call,
                     Callback<ModelInfo> done);
  std::future<absl::StatusOr<ModelInfo>> GetModelFuture(
      absl::string_view model = "", const CallOptions& call = {});

  // grpc.health.v1.Health/Check for `service`: "" is the whole server,
  // "favor.v1.Favor" the Favor service. NOT_FOUND when the server does not
  // know `service`, UNIMPLEMENTED when it serves no health service. Not
  // retried: it reports the state of the moment (one of the round-robin
  // servers when there are several).
  absl::StatusOr<ServingStatus> CheckHealth(absl::string_view service = "",
                                            const CallOptions& call = {});
  void CheckHealthAsync(absl::string_view service, const CallOptions& call,
                        Callback<ServingStatus> done);
  std::future<absl::StatusOr<ServingStatus>> CheckHealthFuture(
      absl::string_view service = "", const CallOptions& call = {});

  // The options the client was made with.
  const ClientOptions& options() const;

  // The gRPC targets the endpoints became, one per channel (for logs):
  // e.g. {"ipv4:127.0.0.1:50051,127.0.0.1:50052"}.
  std::vector<std::string> targets() const;

  // Implementation details follow.
  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace favor

#endif  // FAVOR_CLIENT_INCLUDE_FAVOR_CLIENT_H_
