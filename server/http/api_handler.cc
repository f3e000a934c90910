#include "server/http/api_handler.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "favor/v1/favor.pb.h"
#include "server/common/request_id.h"
#include "server/http/api_errors.h"
#include "server/http/json_codec.h"
#include "server/http/openai_embeddings.h"
#include "server/http/openapi_document.h"
#include "server/http/server_info.h"
#include "server/service/bearer_auth.h"

namespace favor::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr absl::string_view kTimeoutHeader = "X-Request-Timeout";
constexpr char kRequestIdResponseHeader[] = "X-Request-Id";

// "2.5" (seconds) or an absl duration ("500ms", "2s"); positive.
absl::StatusOr<absl::Duration> ParseTimeout(absl::string_view text) {
  double seconds = 0;
  absl::Duration timeout;
  if (absl::SimpleAtod(text, &seconds)) {
    timeout = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &timeout)) {
    timeout = absl::ZeroDuration();
  }
  if (timeout <= absl::ZeroDuration() || timeout == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTimeoutHeader,
                     " is a positive number of seconds ('2.5') or a "
                     "duration ('500ms'), not '",
                     text, "'"));
  }
  return timeout;
}

// The service's answer as a `Message`, or the error to answer with.
template <typename Message>
absl::StatusOr<Message> ParseAnswer(const ServiceClient::Answer& answer) {
  if (!answer.status.ok()) return answer.status;
  Message message;
  if (!message.ParseFromString(answer.response)) {
    return absl::InternalError("the service's answer cannot be read");
  }
  return message;
}

Response JsonResponse(std::string json) {
  return MakeResponse(Status::ok, "application/json", std::move(json));
}

// Where an embedding call's time went, in the W3C Server-Timing header
// (browsers' developer tools show it) and in text-embeddings-inference's
// headers (milliseconds), which clients written for TEI read.
void SetTimingHeaders(const v1::EmbedResponse& answer, Response& response) {
  const v1::ServerTiming& timing = answer.timing();
  response.set("Server-Timing",
               absl::StrFormat("queue;dur=%.3f, compute;dur=%.3f",
                               timing.queue_time_micros() / 1e3,
                               timing.compute_time_micros() / 1e3));
  response.set("x-queue-time", absl::StrCat(timing.queue_time_micros() / 1000));
  response.set("x-inference-time",
               absl::StrCat(timing.compute_time_micros() / 1000));
  response.set("x-compute-tokens", absl::StrCat(answer.num_tokens()));
}

// Every value of the header `name` (usually none or one).
std::vector<absl::string_view> HeaderValues(const RequestHeader& header,
                                            absl::string_view name) {
  std::vector<absl::string_view> values;
  const auto [begin, end] =
      header.equal_range(boost::beast::string_view(name.data(), name.size()));
  for (auto it = begin; it != end; ++it) values.push_back(ViewOf(it->value()));
  return values;
}

}  // namespace

// One request that its header admitted: its route, its metrics label, its
// ids and the timeout its service call gets, made once from the header.
class ApiHandler::Admitted final : public Exchange {
 public:
  Admitted(ApiHandler* api, Route route, std::string route_label,
           absl::Duration timeout, CallIds ids, std::string peer)
      : api_(api),
        route_(std::move(route)),
        route_label_(std::move(route_label)),
        timeout_(timeout),
        ids_(std::move(ids)),
        peer_(std::move(peer)) {}

  void Handle(const Request& request, Responder undecorated,
              std::shared_ptr<ClientGone> client_gone) override {
    auto record = std::make_shared<AccessRecord>();
    record->request_id = ids_.request_id;
    record->traceparent = ids_.traceparent;
    record->peer = peer_;
    Responder respond = api_->Recorded(
        route_label_,
        [api = api_, origin = std::string(request[bhttp::field::origin]),
         respond = std::move(undecorated)](Response response) mutable {
          api->cors_.Decorate(origin, response);
          respond(std::move(response));
        },
        record);
    if (api_->cors_.enabled() && CorsPolicy::IsPreflight(request)) {
      absl::StatusOr<Response> preflight =
          api_->cors_.Preflight(request, ViewOf(bhttp::to_string(route_.verb)));
      return respond(preflight.ok() ? *std::move(preflight)
                                    : ErrorResponse(preflight.status()));
    }
    // The deadline covers queue and compute from when the request is in.
    ServiceClient::CallOptions call;
    call.deadline = absl::Now() + timeout_;
    call.client_gone = std::move(client_gone);
    call.request_id = ids_.request_id;
    call.traceparent = ids_.traceparent;
    call.usage = std::move(record);
    switch (route_.kind) {
      case RouteKind::kEmbeddings:
        return api_->Embeddings(request, call, std::move(respond));
      case RouteKind::kModels:
        return api_->Models(call, std::move(respond));
      case RouteKind::kModel:
        return api_->OneModel(route_.method, call, std::move(respond));
      case RouteKind::kHealth:
        return api_->Health(std::move(respond));
      case RouteKind::kOpenApi:
        return respond(MakeResponse(Status::ok, "application/json",
                                    std::string(OpenApiDocument())));
      case RouteKind::kDocs:
        return respond(api_->docs_.Serve(route_.method));
      case RouteKind::kInfo:
        return api_->Info(route_.method, call, std::move(respond));
      case RouteKind::kFavor:
        return api_->FavorMethod(route_.method, request, call,
                                 std::move(respond));
      case RouteKind::kNone:
        break;
    }
    respond(ErrorResponse(Status::not_found, "no such path"));
  }

 private:
  ApiHandler* const api_;
  const Route route_;
  const std::string route_label_;
  const absl::Duration timeout_;
  const CallIds ids_;
  const std::string peer_;
};

ApiHandler::ApiHandler(const Options& options,
                       std::shared_ptr<grpc::Channel> channel,
                       absl::AnyInvocable<bool() const> serving,
                       metrics::Metrics* metrics)
    : options_(options),
      cors_(options.cors_allow_origins),
      serving_(std::move(serving)),
      metrics_(metrics != nullptr ? metrics : metrics::Metrics::Noop()),
      client_(std::move(channel), options.in_process_key),
      favor_json_(options.call_limits),
      docs_(options.docs_page) {}

Responder ApiHandler::Recorded(std::string route, Responder respond,
                               std::shared_ptr<AccessRecord> record) const {
  return [this, route = std::move(route), start = absl::Now(),
          respond = std::move(respond),
          record = std::move(record)](Response response) mutable {
    const absl::Duration duration = absl::Now() - start;
    metrics_->RecordHttpRequest(route, response.result_int(), duration);
    Log(route, duration, std::move(*record), response);
    respond(std::move(response));
  };
}

void ApiHandler::Log(absl::string_view route, absl::Duration duration,
                     AccessRecord record, Response& response) const {
  response.set(kRequestIdResponseHeader, record.request_id);
  if (options_.access_log == nullptr) return;
  record.time = absl::Now();
  record.protocol = "http";
  record.route = std::string(route);
  record.http_status = response.result_int();
  record.duration = duration;
  options_.access_log->Write(record);
}

Response ApiHandler::Refuse(Status status, absl::string_view message) {
  return RefuseFrom(status, message, "");
}

Response ApiHandler::RefuseFrom(Status status, absl::string_view message,
                                absl::string_view peer) {
  Response response = ErrorResponse(status, message);
  metrics_->RecordHttpRequest("(other)", response.result_int(),
                              absl::ZeroDuration());
  AccessRecord record;
  record.request_id = NewRequestId();
  record.peer = std::string(peer);
  Log("(other)", absl::ZeroDuration(), std::move(record), response);
  return response;
}

Handler::Admission ApiHandler::Accept(const RequestHeader& header) {
  return AcceptFrom(header, "");
}

Handler::Admission ApiHandler::AcceptFrom(const RequestHeader& header,
                                          absl::string_view peer) {
  Route route = RouteOf(ViewOf(header.target()));
  std::string label = RouteLabel(route, ViewOf(header.target()));
  CallIds ids = ReadCallIds(HeaderValues(header, kRequestIdHeader),
                            HeaderValues(header, kTraceparentHeader));
  absl::Duration timeout = options_.default_timeout;
  std::optional<Response> refusal = Admit(header, route, &timeout);
  if (!refusal.has_value() && !ids.status.ok()) {
    refusal = ErrorResponse(ids.status);
  }
  if (refusal.has_value()) {
    metrics_->RecordHttpRequest(label, refusal->result_int(),
                                absl::ZeroDuration());
    cors_.Decorate(ViewOf(header[bhttp::field::origin]), *refusal);
    AccessRecord record;
    record.request_id = ids.request_id;
    record.traceparent = ids.traceparent;
    record.peer = std::string(peer);
    Log(label, absl::ZeroDuration(), std::move(record), *refusal);
    return *std::move(refusal);
  }
  return std::make_unique<Admitted>(this, std::move(route), std::move(label),
                                    timeout, std::move(ids), std::string(peer));
}

std::optional<Response> ApiHandler::Admit(const RequestHeader& header,
                                          const Route& route,
                                          absl::Duration* timeout) const {
  if (route.kind == RouteKind::kNone) {
    return ErrorResponse(
        Status::not_found,
        absl::StrCat("no such path: ", ViewOf(header.target())));
  }
  // Answered by Handle (the body, if any, read and dropped): the connection
  // stays open for the request the preflight is for.
  if (cors_.enabled() && CorsPolicy::IsPreflight(header)) return std::nullopt;
  if (header.method() != route.verb) {
    Response refusal = ErrorResponse(
        Status::method_not_allowed,
        absl::StrCat(ViewOf(header.target()), " takes ",
                     ViewOf(bhttp::to_string(route.verb)), " only"));
    // HEAD is a GET to the handler (http_server.h).
    refusal.set(bhttp::field::allow,
                route.verb == bhttp::verb::get ? "GET, HEAD" : "POST");
    return refusal;
  }
  if (OpenRoute(route.kind)) return std::nullopt;
  if (route.bad_escape) {
    return ErrorResponse(
        Status::bad_request,
        absl::StrCat("the model name in ", ViewOf(header.target()),
                     " has a '%' not followed by two hex digits"));
  }
  if (route.kind == RouteKind::kModel || route.kind == RouteKind::kInfo) {
    // Decoded, it goes into a proto3 string, which must be UTF-8.
    const absl::Status utf8 = CheckUtf8(route.method, "the model name");
    if (!utf8.ok()) return ErrorResponse(utf8);
  }
  const absl::string_view encoding =
      ViewOf(header[bhttp::field::content_encoding]);
  if (!encoding.empty() && !absl::EqualsIgnoreCase(encoding, "identity")) {
    return ErrorResponse(
        Status::unsupported_media_type,
        absl::StrCat("Content-Encoding '", encoding,
                     "' is not supported: send the body as it is"));
  }
  if (route.kind == RouteKind::kFavor) {
    absl::Status method = favor_json_.CheckMethod(route.method);
    // With no code: NOT_FOUND's model_not_found is about models.
    if (!method.ok()) {
      return ErrorResponse(HttpStatusOf(method.code()), method.message());
    }
  }
  const absl::string_view authorization =
      ViewOf(header[bhttp::field::authorization]);
  // The one check of the key: the service's calls carry its in-process
  // key instead (bearer_auth.h).
  const bool keyless_info =
      route.kind == RouteKind::kInfo && !options_.info_requires_key;
  if (!options_.bearer_tokens.empty() && !keyless_info) {
    absl::Status key =
        service::CheckBearerToken(authorization, options_.bearer_tokens);
    if (!key.ok()) return ErrorResponse(key);
  }
  absl::StatusOr<absl::Duration> requested = TimeoutOf(header);
  if (!requested.ok()) return ErrorResponse(requested.status());
  // A credential is printable ASCII (RFC 9110 11.6.2's token68), also where
  // no key is needed.
  if (!std::all_of(authorization.begin(), authorization.end(),
                   absl::ascii_isprint)) {
    return ErrorResponse(absl::InvalidArgumentError(
        "the Authorization header holds bytes that are not printable ASCII"));
  }
  *timeout = *requested;
  return std::nullopt;
}

absl::StatusOr<absl::Duration> ApiHandler::TimeoutOf(
    const RequestHeader& header) const {
  const auto found = header.find(
      boost::beast::string_view(kTimeoutHeader.data(), kTimeoutHeader.size()));
  if (found == header.end()) return options_.default_timeout;
  return ParseTimeout(ViewOf(found->value()));
}

void ApiHandler::Embeddings(const Request& request,
                            const ServiceClient::CallOptions& call,
                            Responder respond) {
  absl::StatusOr<EmbeddingsCall> embeddings =
      ParseEmbeddingsRequest(request.body(), options_.call_limits);
  if (!embeddings.ok()) return respond(ErrorResponse(embeddings.status()));
  std::string request_bytes = embeddings->request.SerializeAsString();
  client_.Call(
      "Embed", std::move(request_bytes), call,
      [embeddings = *std::move(embeddings),
       respond = std::move(respond)](ServiceClient::Answer answer) mutable {
        auto response = ParseAnswer<v1::EmbedResponse>(answer);
        if (!response.ok()) {
          return respond(
              ErrorResponse(response.status(), answer.retry_after_millis));
        }
        Response ok =
            JsonResponse(EmbeddingsResponseJson(*response, embeddings));
        SetTimingHeaders(*response, ok);
        respond(std::move(ok));
      });
}

void ApiHandler::Models(const ServiceClient::CallOptions& call,
                        Responder respond) {
  client_.Call(
      "ListModels", v1::ListModelsRequest().SerializeAsString(), call,
      [respond = std::move(respond)](ServiceClient::Answer answer) mutable {
        auto response = ParseAnswer<v1::ListModelsResponse>(answer);
        if (!response.ok()) {
          return respond(
              ErrorResponse(response.status(), answer.retry_after_millis));
        }
        respond(JsonResponse(ModelListJson(*response)));
      });
}

void ApiHandler::OneModel(const std::string& model,
                          const ServiceClient::CallOptions& call,
                          Responder respond) {
  v1::GetModelRequest get;
  get.set_model(model);
  client_.Call(
      "GetModel", get.SerializeAsString(), call,
      [respond = std::move(respond)](ServiceClient::Answer answer) mutable {
        auto response = ParseAnswer<v1::GetModelResponse>(answer);
        if (!response.ok()) {
          return respond(
              ErrorResponse(response.status(), answer.retry_after_millis));
        }
        respond(JsonResponse(ModelJson(response->model())));
      });
}

void ApiHandler::Info(const std::string& model,
                      const ServiceClient::CallOptions& call,
                      Responder respond) {
  v1::GetModelRequest get;
  get.set_model(model);
  client_.Call("GetModel", get.SerializeAsString(), call,
               [this, respond = std::move(respond)](
                   ServiceClient::Answer answer) mutable {
                 auto response = ParseAnswer<v1::GetModelResponse>(answer);
                 if (!response.ok()) {
                   return respond(ErrorResponse(response.status(),
                                                answer.retry_after_millis));
                 }
                 respond(JsonResponse(
                     InfoJson(response->model(), options_.server_info)));
               });
}

void ApiHandler::Health(Responder respond) const {
  const bool serving = serving_();
  respond(MakeResponse(
      serving ? Status::ok : Status::service_unavailable, "application/json",
      serving ? R"({"status":"SERVING"})" : R"({"status":"NOT_SERVING"})"));
}

void ApiHandler::FavorMethod(const std::string& method, const Request& request,
                             const ServiceClient::CallOptions& call,
                             Responder respond) {
  absl::StatusOr<std::string> binary =
      favor_json_.RequestFromJson(method, request.body());
  if (!binary.ok()) return respond(ErrorResponse(binary.status()));
  client_.Call(method, *std::move(binary), call,
               [this, method, respond = std::move(respond)](
                   ServiceClient::Answer answer) mutable {
                 absl::StatusOr<std::string> json =
                     answer.status.ok()
                         ? favor_json_.ResponseToJson(method, answer.response)
                         : absl::StatusOr<std::string>(answer.status);
                 if (!json.ok()) {
                   return respond(
                       ErrorResponse(json.status(), answer.retry_after_millis));
                 }
                 respond(JsonResponse(*std::move(json)));
               });
}

}  // namespace favor::http
