#include "favor/client.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "channels.h"
#include "client_impl.h"
#include "convert.h"
#include "health.h"
#include "unary_call.h"
#include "utf8.h"

namespace favor {
namespace {

using client_internal::CallFavor;
using client_internal::Retries;
using client_internal::UnaryCall;
using client_internal::UnaryCallSettings;

// The future form of a callback-taking call: `start(callback)`.
template <typename T, typename StartFn>
std::future<absl::StatusOr<T>> AsFuture(StartFn start) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<T>>>();
  std::future<absl::StatusOr<T>> future = promise->get_future();
  start([promise](absl::StatusOr<T> result) {
    promise->set_value(std::move(result));
  });
  return future;
}

// The request's tensors pass Tensor::Validate; INVALID_ARGUMENT naming the
// first that does not.
absl::Status ValidateTensors(const AttendRequest& request) {
  std::vector<std::pair<const char*, const Tensor*>> tensors = {
      {"query", &request.query},
      {"key", &request.key},
      {"value", &request.value}};
  if (request.projection_matrix.has_value()) {
    tensors.emplace_back("projection_matrix", &*request.projection_matrix);
  }
  for (const auto& [name, tensor] : tensors) {
    if (absl::Status status = tensor->Validate(); !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("AttendRequest.", name, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* ServingStatusName(ServingStatus status) {
  switch (status) {
    case ServingStatus::kServing:
      return "SERVING";
    case ServingStatus::kNotServing:
      return "NOT_SERVING";
    case ServingStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

// --- Client::Impl ------------------------------------------------------------

Client::Impl::Impl(ClientOptions options, std::vector<std::string> targets)
    : options_(std::move(options)), targets_(std::move(targets)) {
  channels_ = client_internal::MakeChannels(options_, targets_);
  for (const std::shared_ptr<grpc::Channel>& channel : channels_) {
    stubs_.push_back(v1::Favor::NewStub(channel));
    generic_stubs_.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
}

Client::Impl::~Impl() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    for (client_internal::CallBase* call : calls_) call->Cancel();
  }
  // Pending retries run now and find themselves cancelled.
  timer_.Shutdown();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::set<client_internal::CallBase*>* calls) {
        return calls->empty();
      },
      &calls_));
}

size_t Client::Impl::NextChannel() {
  if (channels_.size() == 1) return 0;
  return next_channel_.fetch_add(1, std::memory_order_relaxed) %
         channels_.size();
}

absl::Time Client::Impl::DeadlineFor(const CallOptions& call) const {
  if (call.deadline != absl::InfiniteFuture()) return call.deadline;
  if (call.timeout == absl::InfiniteDuration()) return absl::InfiniteFuture();
  const absl::Duration timeout = call.timeout == absl::ZeroDuration()
                                     ? options_.default_timeout
                                     : call.timeout;
  return absl::Now() + timeout;
}

void Client::Impl::PrepareContext(absl::Time deadline, bool wait_for_ready,
                                  grpc::ClientContext* context) const {
  if (deadline != absl::InfiniteFuture()) {
    context->set_deadline(absl::ToChronoTime(deadline));
  }
  context->set_wait_for_ready(wait_for_ready);
  if (!options_.bearer_token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.bearer_token);
  }
}

bool Client::Impl::Register(client_internal::CallBase* call) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return false;
  calls_.insert(call);
  return true;
}

void Client::Impl::Unregister(client_internal::CallBase* call) {
  absl::MutexLock lock(&mu_);
  calls_.erase(call);
}

// --- Client ------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Client>> Client::Create(
    const ClientOptions& options) {
  if (absl::Status status = client_internal::ValidateOptions(options);
      !status.ok()) {
    return status;
  }
  absl::StatusOr<std::vector<std::string>> targets =
      client_internal::TargetsFor(options.endpoints);
  if (!targets.ok()) return targets.status();
  return std::unique_ptr<Client>(
      new Client(std::make_unique<Impl>(options, *std::move(targets))));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options(); }

std::vector<std::string> Client::targets() const { return impl_->targets(); }

// Embed.

void Client::EmbedAsync(absl::Span<const EmbedInput> inputs,
                        const EmbedOptions& options, const CallOptions& call,
                        Callback<EmbedResult> done) {
  if (absl::Status status = client_internal::CheckInputTexts(inputs);
      !status.ok()) {
    done(std::move(status));
    return;
  }
  v1::EmbedRequest request;
  client_internal::ToProto(inputs, options, &request);
  CallFavor(impl_.get(), &v1::Favor::Stub::async::Embed, std::move(request),
            call, std::move(done));
}

std::future<absl::StatusOr<EmbedResult>> Client::EmbedFuture(
    absl::Span<const EmbedInput> inputs, const EmbedOptions& options,
    const CallOptions& call) {
  return AsFuture<EmbedResult>([&](Callback<EmbedResult> done) {
    EmbedAsync(inputs, options, call, std::move(done));
  });
}

absl::StatusOr<EmbedResult> Client::Embed(absl::Span<const EmbedInput> inputs,
                                          const EmbedOptions& options,
                                          const CallOptions& call) {
  return EmbedFuture(inputs, options, call).get();
}

// The TokenIds forms: the same calls, each sequence one input.

void Client::EmbedAsync(absl::Span<const TokenIds> inputs,
                        const EmbedOptions& options, const CallOptions& call,
                        Callback<EmbedResult> done) {
  EmbedAsync(client_internal::ToEmbedInputs(inputs), options, call,
             std::move(done));
}

std::future<absl::StatusOr<EmbedResult>> Client::EmbedFuture(
    absl::Span<const TokenIds> inputs, const EmbedOptions& options,
    const CallOptions& call) {
  return EmbedFuture(client_internal::ToEmbedInputs(inputs), options, call);
}

absl::StatusOr<EmbedResult> Client::Embed(absl::Span<const TokenIds> inputs,
                                          const EmbedOptions& options,
                                          const CallOptions& call) {
  return Embed(client_internal::ToEmbedInputs(inputs), options, call);
}

// Tokenize.

void Client::TokenizeAsync(absl::Span<const std::string> texts,
                           const TokenizeOptions& options,
                           const CallOptions& call,
                           Callback<TokenizeResult> done) {
  if (absl::Status status = client_internal::CheckTexts(texts); !status.ok()) {
    done(std::move(status));
    return;
  }
  v1::TokenizeRequest request;
  client_internal::ToProto(texts, options, &request);
  CallFavor(impl_.get(), &v1::Favor::Stub::async::Tokenize, std::move(request),
            call, std::move(done));
}

std::future<absl::StatusOr<TokenizeResult>> Client::TokenizeFuture(
    absl::Span<const std::string> texts, const TokenizeOptions& options,
    const CallOptions& call) {
  return AsFuture<TokenizeResult>([&](Callback<TokenizeResult> done) {
    TokenizeAsync(texts, options, call, std::move(done));
  });
}

absl::StatusOr<TokenizeResult> Client::Tokenize(
    absl::Span<const std::string> texts, const TokenizeOptions& options,
    const CallOptions& call) {
  return TokenizeFuture(texts, options, call).get();
}

// Attend.

void Client::AttendAsync(const AttendRequest& request, const CallOptions& call,
                         Callback<AttendResult> done) {
  if (absl::Status status = ValidateTensors(request); !status.ok()) {
    done(std::move(status));
    return;
  }
  v1::AttendRequest proto;
  client_internal::ToProto(request, &proto);
  CallFavor(impl_.get(), &v1::Favor::Stub::async::Attend, std::move(proto),
            call, std::move(done));
}

std::future<absl::StatusOr<AttendResult>> Client::AttendFuture(
    const AttendRequest& request, const CallOptions& call) {
  return AsFuture<AttendResult>([&](Callback<AttendResult> done) {
    AttendAsync(request, call, std::move(done));
  });
}

absl::StatusOr<AttendResult> Client::Attend(const AttendRequest& request,
                                            const CallOptions& call) {
  return AttendFuture(request, call).get();
}

// ListModels.

void Client::ListModelsAsync(const CallOptions& call,
                             Callback<ModelList> done) {
  CallFavor(impl_.get(), &v1::Favor::Stub::async::ListModels,
            v1::ListModelsRequest(), call, std::move(done));
}

std::future<absl::StatusOr<ModelList>> Client::ListModelsFuture(
    const CallOptions& call) {
  return AsFuture<ModelList>([&](Callback<ModelList> done) {
    ListModelsAsync(call, std::move(done));
  });
}

absl::StatusOr<ModelList> Client::ListModels(const CallOptions& call) {
  return ListModelsFuture(call).get();
}

// GetModel.

void Client::GetModelAsync(absl::string_view model, const CallOptions& call,
                           Callback<ModelInfo> done) {
  v1::GetModelRequest request;
  request.set_model(std::string(model));
  CallFavor(impl_.get(), &v1::Favor::Stub::async::GetModel, std::move(request),
            call, std::move(done));
}

std::future<absl::StatusOr<ModelInfo>> Client::GetModelFuture(
    absl::string_view model, const CallOptions& call) {
  return AsFuture<ModelInfo>([&](Callback<ModelInfo> done) {
    GetModelAsync(model, call, std::move(done));
  });
}

absl::StatusOr<ModelInfo> Client::GetModel(absl::string_view model,
                                           const CallOptions& call) {
  return GetModelFuture(model, call).get();
}

// CheckHealth: grpc.health.v1 through the generic stub (no generated code
// for it), so not CallFavor.

void Client::CheckHealthAsync(absl::string_view service,
                              const CallOptions& call,
                              Callback<ServingStatus> done) {
  Impl* impl = impl_.get();
  UnaryCall<grpc::ByteBuffer, grpc::ByteBuffer, ServingStatus>::Run(
      impl, client_internal::HealthCheckRequest(service),
      UnaryCallSettings{impl->DeadlineFor(call), call.wait_for_ready,
                        Retries::kNone},
      [impl](size_t channel, grpc::ClientContext* context,
             const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
             std::function<void(grpc::Status)> on_done) {
        impl->generic_stub(channel).UnaryCall(
            context, client_internal::kHealthCheckMethod, grpc::StubOptions(),
            request, response, std::move(on_done));
      },
      client_internal::ParseHealthCheckResponse, std::move(done));
}

std::future<absl::StatusOr<ServingStatus>> Client::CheckHealthFuture(
    absl::string_view service, const CallOptions& call) {
  return AsFuture<ServingStatus>([&](Callback<ServingStatus> done) {
    CheckHealthAsync(service, call, std::move(done));
  });
}

absl::StatusOr<ServingStatus> Client::CheckHealth(absl::string_view service,
                                                  const CallOptions& call) {
  return CheckHealthFuture(service, call).get();
}

}  // namespace favor
