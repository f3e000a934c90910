// The favor.v1.Favor service (proto/favor/v1/favor.proto) on gRPC's callback
// API. Nothing blocks in a handler: a call is checked at the edge
// (embed_validation.h, attend_validation.h), turned into batching::Requests
// and handed to a Batcher, and answered later from the batch worker through
// the requests' done callbacks (unary_call.h).
//
// Embed: one Request per input (per window with TRUNCATION_CHUNK), into the
// model's Batcher, whose EmbedRunner packs each batch into one Model::Embed
// call. The call is answered when all of its inputs are (embed_gather.h);
// the first failure answers it and drops its other inputs. A call with text
// is checked in the handler, then tokenised on the tokenizer threads
// (task_pool.h, embed_inputs.h), never in a gRPC reactor nor on a batch
// worker; those threads enqueue its inputs. EmbedStream: a reactor of its
// own (embed_stream_call.h) that starts each message through the same
// StartEmbed. Tokenize: on the tokenizer threads too (tokenize_texts.h).
// Attend: one Request per call into the Attend batcher (one request per
// batch), whose AttendRunner runs the attention library. ListModels /
// GetModel answer at once from the models' descriptions and the limits in
// Options.
//
// Reloading (docs/server.md, Reloading models): the models live in a
// ModelRegistry (model_registry.h). A call looks its model up once and
// holds that revision until it is answered; InstallModel() and
// RemoveModel() swap revisions in place, and a replaced revision finishes
// the calls it has accepted before it is freed.
//
// Draining (docs/server.md, Shutdown): after StartDraining() every new call,
// stream and stream message is answered UNAVAILABLE; Shutdown() also drains
// the batchers (queued work still runs, until the drain timeout), then tells
// every open stream to answer what it has read and finish (open_calls.h);
// WaitForOpenCalls() waits until gRPC has sent the status of every call
// accepted before. Status codes come from one mapping (status_mapping.h).
//
// Thread-safe; no LibTorch in this header or its implementation.
#ifndef FAVOR_SERVER_SERVICE_FAVOR_SERVICE_H_
#define FAVOR_SERVER_SERVICE_FAVOR_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "favor/v1/favor.grpc.pb.h"
#include "server/batching/batcher.h"
#include "server/batching/clock.h"
#include "server/common/access_log.h"
#include "server/metrics/batcher_metrics.h"
#include "server/metrics/metrics.h"
#include "server/model/model.h"
#include "server/service/attend_runner.h"
#include "server/service/attend_validation.h"
#include "server/service/embed_call.h"
#include "server/service/embed_inputs.h"
#include "server/service/embed_runner.h"
#include "server/service/embed_stream_call.h"
#include "server/service/embed_validation.h"
#include "server/service/model_registry.h"
#include "server/service/open_calls.h"
#include "server/service/serving_model.h"
#include "server/service/task_pool.h"

namespace favor::service {

class UnaryCall;

class FavorService final : public v1::Favor::CallbackService,
                           private EmbedStreamCall::Service {
 public:
  // The Attend batcher's defaults: one request per batch, no waiting for
  // company, cost counted as batch × (query_length + key_length).
  static batching::Batcher::Options DefaultAttendBatching();

  struct Options {
    // Per Embed call (ModelLimits.max_inputs_per_call, max_tokens_per_call):
    // over either is INVALID_ARGUMENT naming it. max_tokens_per_input is
    // each model's max_sequence_length.
    int64_t max_inputs_per_call = 1024;
    int64_t max_tokens_per_call = int64_t{1} << 20;
    // Bytes of text over all inputs of one Embed call, stream message or
    // Tokenize call (ModelLimits.max_text_bytes_per_call), checked before
    // anything is made from the text. 16 MiB holds about three million
    // tokens of English.
    int64_t max_text_bytes_per_call = int64_t{16} << 20;
    // Late-chunking spans in one input (ModelLimits.max_spans_per_input).
    int64_t max_spans_per_input = 1024;
    // Threads that tokenise text (Embed, EmbedStream, Tokenize), and how
    // many calls may wait for them before one is refused with
    // RESOURCE_EXHAUSTED (retryable). WordPiece reads 20 MB/s or more per
    // thread, so a few threads keep up with the encoder.
    int tokenizer_threads = 2;
    int64_t max_queued_tokenizations = 1024;
    // Messages of one EmbedStream read but not yet answered; the server
    // stops reading the stream at this many (backpressure), so a client
    // that sends faster than it reads cannot make the server buffer without
    // bound.
    int64_t max_stream_messages_in_flight = 256;
    // The same in bytes: the server stops reading a stream while the
    // answers of its messages read and not yet written may take this many
    // bytes (each counted at its bound until computed: AnswerBytesBound),
    // so a client that does not read its answers holds at most this much
    // (and one answer more) in the server.
    int64_t max_stream_answer_bytes_in_flight = int64_t{64} << 20;
    // The largest answer message gRPC may send (favor-server's
    // --max_message_bytes). A call or stream message whose answer could
    // exceed it once tokenised is refused with RESOURCE_EXHAUSTED before
    // it is queued, not computed and then dropped by gRPC.
    int64_t max_answer_message_bytes = int64_t{64} << 20;
    // Options of every model's Batcher (model_name and
    // batch_memory_overhead_bytes are set per model). With a memory_budget,
    // each input is counted by the model's estimate (memory_estimate.h); the
    // Attend batcher is bounded by attend_limits instead.
    batching::Batcher::Options embed_batching;
    // Options of the Attend batcher, and the size limits of its tensors.
    batching::Batcher::Options attend_batching = DefaultAttendBatching();
    // Where Attend computes: "cpu", "cuda" or "cuda:N" (the models'
    // device, favor-server's --device).
    std::string attend_device = "cpu";
    AttendLimits attend_limits;
    // The model of requests that name none. Empty: "default" if there is a
    // model of that name, else the first model by name.
    std::string default_model;
    // Non-empty: every Favor RPC must carry "authorization: Bearer <t>"
    // with `t` one of these, else it is answered UNAUTHENTICATED
    // (bearer_auth.h). Empty: no authentication.
    std::vector<std::string> bearer_tokens;
    // Where each call's access-log line goes (call_log.h); null: nowhere.
    // Must outlive the service.
    AccessLog* access_log = nullptr;
  };

  // A model to serve: its revision (model_fingerprint.h; may be empty) and
  // what to run once that revision is freed (may be empty).
  struct Servable {
    std::shared_ptr<const model::Model> model;  // Not null.
    std::string revision;
    absl::AnyInvocable<void()> on_freed;
  };

  // Starts one Batcher per model and the Attend batcher. `models` (at least
  // one, distinct names), `metrics` (null: metrics::Metrics::Noop()) and
  // `clock` (null: RealClock) must outlive the service. INVALID_ARGUMENT for
  // bad options or an unknown default_model. The default model is chosen
  // here, once.
  static absl::StatusOr<std::unique_ptr<FavorService>> Create(
      const Options& options, std::vector<Servable> models,
      metrics::Metrics* metrics, batching::Clock* clock = nullptr);
  // The same over models that the caller owns (no revision).
  static absl::StatusOr<std::unique_ptr<FavorService>> Create(
      const Options& options, const std::vector<const model::Model*>& models,
      metrics::Metrics* metrics, batching::Clock* clock = nullptr);

  // Serves `model` under its name from now on (a new model, or a new
  // revision beside the old one, which finishes the calls it has accepted
  // and is then freed). The model should be warmed up already: calls reach
  // it as soon as this returns. INVALID_ARGUMENT when its batcher cannot
  // start.
  absl::Status InstallModel(Servable model);
  // Stops serving `name`; its calls in flight finish first. NOT_FOUND when
  // none serves; FAILED_PRECONDITION for the default model, which keeps
  // serving (requests that name no model would fail).
  absl::Status RemoveModel(absl::string_view name);
  // Why the latest load of `name` failed: GetModel and ListModels show it;
  // whatever serves `name` keeps serving.
  void RecordLoadFailure(absl::string_view name, const absl::Status& status);
  // Forgets it: the folder holds the serving revision again.
  void ClearLoadFailure(absl::string_view name);
  const ModelRegistry& registry() const { return registry_; }

  ~FavorService() override;  // Shutdown(absl::ZeroDuration())
  FavorService(const FavorService&) = delete;
  FavorService& operator=(const FavorService&) = delete;

  // New calls are answered UNAVAILABLE from now on.
  void StartDraining();
  bool draining() const { return !open_calls_.accepting(); }
  // StartDraining(), then drains every batcher: queued work runs until
  // `drain_timeout` (shared by all batchers), the rest is answered
  // UNAVAILABLE. Then every open EmbedStream stops reading, answers what it
  // has read and finishes UNAVAILABLE (OK if its client had closed its
  // side). Returns when every unary call has been answered.
  void Shutdown(absl::Duration drain_timeout);
  // Blocks until gRPC is done with every call accepted before
  // StartDraining() (each one's status is sent), or for at most `timeout`;
  // false when some are still open then.
  bool WaitForOpenCalls(absl::Duration timeout);
  int64_t num_open_calls() const { return open_calls_.num_open(); }

  const std::string& default_model() const { return default_model_; }

  // What a caller within the process (the HTTP front, over the gRPC
  // server's in-process channel) sends as kInProcessKeyMetadata
  // (bearer_auth.h) to show that it has authenticated the request itself.
  const std::string& in_process_key() const { return in_process_key_; }

  grpc::ServerUnaryReactor* Embed(grpc::CallbackServerContext* context,
                                  const v1::EmbedRequest* request,
                                  v1::EmbedResponse* response) override;
  grpc::ServerBidiReactor<v1::EmbedStreamRequest, v1::EmbedStreamResponse>*
  EmbedStream(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Attend(grpc::CallbackServerContext* context,
                                   const v1::AttendRequest* request,
                                   v1::AttendResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(
      grpc::CallbackServerContext* context,
      const v1::ListModelsRequest* request,
      v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* GetModel(grpc::CallbackServerContext* context,
                                     const v1::GetModelRequest* request,
                                     v1::GetModelResponse* response) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;

  // Implementation details follow.
 private:
  using Lease = ModelRegistry::Lease;

  FavorService(const Options& options, metrics::Metrics* metrics,
               batching::Clock* clock);
  absl::StatusOr<std::unique_ptr<ServingModel>> NewServingModel(
      Servable servable) const;
  absl::Status ChooseDefaultModel(const std::vector<Servable>& models);
  // What GetModel says of `model` now: its info and its load error.
  v1::ModelInfo InfoOf(const ServingModel& model) const;
  absl::Status StartAttendBatcher();
  absl::Status StartTokenizerPool();

  // The reactor of a unary call of `method`: unless the service drains,
  // runs `start` on it, whose OK means that the call is answered or will
  // be; an error from either is answered at once.
  template <typename Start>
  grpc::ServerUnaryReactor* StartUnary(grpc::CallbackServerContext* context,
                                       absl::string_view method, Start start);

  // The revision serving `name` ("": the default model) now; the call
  // holds it until it is answered.
  absl::StatusOr<Lease> FindModel(absl::string_view name) const;

  // EmbedStreamCall::Service, also the unary Embed's path.
  absl::Status CheckServing() const override;
  absl::Status StartEmbed(
      const v1::EmbedRequest& request, absl::Time deadline,
      std::shared_ptr<batching::CancellationFlag> cancellation,
      OnModel on_model, absl::AnyInvocable<void(absl::Status)> done,
      v1::EmbedResponse* response) override;

  // StartEmbed's second half, after the checks: the inputs made from
  // `request` (tokenised when it has text) and the parts of `response`
  // known before computing (model, token counts).
  absl::Status PrepareEmbed(const v1::EmbedRequest& request,
                            PreparedEmbed* prepared,
                            v1::EmbedResponse* response);
  // RESOURCE_EXHAUSTED when `prepared`'s answer could exceed the largest
  // message gRPC may send (Options::max_answer_message_bytes).
  absl::Status CheckAnswerFitsAMessage(const v1::EmbedRequest& request,
                                       const PreparedEmbed& prepared) const;
  // Tokenises and enqueues a call with text, on a tokenizer thread.
  void RunTextEmbed(const v1::EmbedRequest& request, PreparedEmbed prepared,
                    absl::Time deadline,
                    std::shared_ptr<batching::CancellationFlag> cancellation,
                    absl::AnyInvocable<void(absl::Status)> done,
                    v1::EmbedResponse* response);
  absl::Status StartAttend(UnaryCall* call, const v1::AttendRequest& request,
                           v1::AttendResponse* response);
  absl::Status StartTokenize(UnaryCall* call,
                             const v1::TokenizeRequest& request,
                             v1::TokenizeResponse* response);

  const Options options_;
  metrics::Metrics* const metrics_;  // Never null.
  batching::Clock* const clock_;
  // Counts the calls accepted and switches acceptance off (draining).
  OpenCalls open_calls_;
  const std::string in_process_key_;
  std::string default_model_;
  ModelRegistry registry_;
  std::unique_ptr<AttendRunner> attend_runner_;
  std::unique_ptr<batching::JobBatcher<AttendWork>> attend_batcher_;
  // Last: shut down, and destroyed, before the batchers its tasks enqueue
  // into.
  std::unique_ptr<TaskPool> tokenizer_pool_;
};

}  // namespace favor::service

#endif  // FAVOR_SERVER_SERVICE_FAVOR_SERVICE_H_
