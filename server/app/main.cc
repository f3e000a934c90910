// favor-server: the Favor gRPC service (server/service) over the models of a
// model repository. Flags live here (and, beside main, in http_flags.cc and
// service_flags.cc) and are copied into Options; every
// default comes from the Options struct it feeds, so `--help` prints the
// numbers that GetModel reports.
//
// Start-up: CPU parallelism, load every model (each failure is logged with
// the loader's message; no model at all exits 1), start the metrics
// endpoint, start gRPC with the Favor service, health checking (NOT_SERVING
// until every model has run one warm-up Embed) and server reflection.
// Security (docs/server.md): TLS from --tls_cert_file/--tls_key_file
// (mutual with --tls_client_ca_file) and bearer tokens from
// --auth_tokens_file; both files are read before the models load and a bad
// one exits 1. Without them: plaintext, no authentication.
// SIGHUP (and --model_repository_poll_seconds): reload the repository in
// place (model_reloader.h; docs/server.md, Reloading models).
// SIGTERM / SIGINT: health NOT_SERVING, new calls UNAVAILABLE, the batchers
// drain for at most --drain_timeout_seconds, open streams finish, the
// answers are sent, and the process exits 0 (shutdown.h: never CANCELLED).

#include <algorithm>
#include <atomic>
#include <climits>
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/app/flag_range.h"
#include "server/app/http_flags.h"
#include "server/app/memory_budget_setup.h"
#include "server/common/build_info.h"
#include "server/app/model_reloader.h"
#include "server/app/protobuf_log.h"
#include "server/app/reload_worker.h"
#include "server/app/service_flags.h"
#include "server/app/shutdown.h"
#include "server/attention/cpu_allocator.h"
#include "server/attention/kernel.h"
#include "server/attention/parallelism.h"
#include "server/common/access_log.h"
#include "server/common/status_macros.h"
#include "server/http/metrics_server.h"
#include "server/metrics/metrics.h"
#include "server/model/model.h"
#include "server/model/model_repository.h"
#include "server/service/bearer_auth.h"
#include "server/service/favor_service.h"
#include "server/service/server_credentials.h"

namespace {

using favor::service::FavorService;

const favor::model::ModelOptions kModel;

}  // namespace

ABSL_FLAG(int, port, 50051, "gRPC port; 0 lets the kernel pick one (logged)");
ABSL_FLAG(std::string, bind_address, "127.0.0.1",
          "address gRPC, HTTP and /metrics listen on (0.0.0.0: every "
          "interface)");
ABSL_FLAG(int, metrics_port, 9464,
          "port of the Prometheus endpoint /metrics; 0 picks one (logged)");
ABSL_FLAG(std::string, model_repository, "models",
          "folder of models, <repository>/<name>/config.json + "
          "model.safetensors; every sub-folder is loaded");
ABSL_FLAG(int64_t, model_repository_poll_seconds, 0,
          "reload --model_repository every this many seconds (new, changed "
          "and removed models; docs/server.md); 0: only on SIGHUP");
ABSL_FLAG(std::string, device, kModel.device,
          "device of every model and of Attend: cpu, cuda or cuda:N");
ABSL_FLAG(std::string, dtype, "float32",
          "compute dtype: float32 (the same embeddings on every machine), "
          "bfloat16 (CUDA, or a CPU with AVX512-BF16 or AMX-BF16: about "
          "twice the throughput; refused elsewhere), float16 (CUDA) or int8 "
          "(CPU with AVX2: int8 linear layers, about 1.4x float32's "
          "throughput on AVX2, pooled cosine to float32 0.9999; the "
          "reduced-precision choice where bfloat16 is refused, "
          "docs/performance.md)");
ABSL_FLAG(int, threads, 0,
          "CPU threads for attention and the encoder; 0: one per hardware "
          "thread");
ABSL_FLAG(int64_t, cpu_block_tokens, kModel.cpu_block_tokens,
          "CPU: tokens per block of the per-token layers (projections, "
          "norms, feed-forward); each thread takes whole blocks");
ABSL_FLAG(int64_t, cpu_sub_batch_tokens, kModel.cpu_sub_batch_tokens,
          "CPU: a batch of several sequences and more tokens than this runs "
          "in sub-batches of whole sequences, each through every layer "
          "before the next (side by side, a thread each, when there are "
          "enough); the same embeddings, faster (docs/models.md); 0: the "
          "whole batch layer by layer");
ABSL_FLAG(int64_t, max_memory_bytes, -1,
          "memory budget in bytes: a batch runs only while its estimated "
          "peak fits beside the batches running and what the process holds "
          "(docs/performance.md); a request that never fits is "
          "RESOURCE_EXHAUSTED; -1: 80% of the smaller of the machine's memory "
          "and the cgroup limit; 0: no budget");
ABSL_FLAG(int64_t, drain_timeout_seconds, 30,
          "on SIGTERM/SIGINT, how long queued work may still run before it "
          "is answered UNAVAILABLE");
ABSL_FLAG(int64_t, max_connection_age_seconds, 0,
          "close each client connection (GOAWAY) after this long, its calls "
          "given --drain_timeout_seconds to finish, so that clients "
          "balancing over DNS find new replicas; 0: never");
ABSL_FLAG(int, max_message_bytes, 64 << 20,
          "largest gRPC message received or sent, in bytes");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "file of bearer tokens, one per line ('#' comments); set: every "
          "Favor RPC needs 'authorization: Bearer <token>' (health and "
          "reflection stay open); empty: no authentication");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain of the server; with --tls_key_file: TLS, "
          "else plaintext");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of the server");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA certificates; set: clients must present a certificate "
          "signed by them (mutual TLS)");

ABSL_FLAG(bool, access_log, true,
          "write one access-log line per HTTP request and gRPC call "
          "(docs/deployment.md, Access logs)");
ABSL_FLAG(std::string, log_format, "text",
          "access-log lines: text (key=value through the log, with its "
          "prefix) or json (one JSON object a line on stderr, nothing "
          "before it)");
ABSL_FLAG(int64_t, slow_call_ms, 0,
          "log calls that take longer than this many milliseconds, in to "
          "answered, at warning level; 0: none");

namespace {

// The access log of the flags; null with --access_log=false.
absl::StatusOr<std::unique_ptr<favor::AccessLog>> AccessLogFromFlags() {
  if (!absl::GetFlag(FLAGS_access_log)) return nullptr;
  favor::AccessLog::Options options;
  ASSIGN_OR_RETURN(options.format, favor::ParseAccessLogFormat(
                                       absl::GetFlag(FLAGS_log_format)));
  const int64_t slow_ms = absl::GetFlag(FLAGS_slow_call_ms);
  if (slow_ms > 0) options.slow_call_threshold = absl::Milliseconds(slow_ms);
  return std::make_unique<favor::AccessLog>(options);
}

// The repository's loader and reloader, with the model options of the
// flags; a dtype this machine cannot run stops start-up with its reason (the
// CPU's missing instruction sets), not one load failure per model.
absl::StatusOr<std::unique_ptr<favor::ModelReloader>> NewReloader(
    favor::metrics::Metrics* metrics) {
  favor::ModelReloader::Options options;
  options.repository = absl::GetFlag(FLAGS_model_repository);
  options.metrics = metrics;
  options.model.device = absl::GetFlag(FLAGS_device);
  options.model.cpu_block_tokens = absl::GetFlag(FLAGS_cpu_block_tokens);
  options.model.cpu_sub_batch_tokens =
      absl::GetFlag(FLAGS_cpu_sub_batch_tokens);
  ASSIGN_OR_RETURN(options.model.dtype,
                   favor::model::ParseComputeDType(absl::GetFlag(FLAGS_dtype)));
  const absl::Status supported =
      favor::model::ValidateModelOptions(options.model);
  if (!supported.ok()) {
    return absl::Status(supported.code(),
                        absl::StrCat("--device=", options.model.device,
                                     " --dtype=", absl::GetFlag(FLAGS_dtype),
                                     ": ", supported.message()));
  }
  return std::make_unique<favor::ModelReloader>(std::move(options));
}

// One small Embed per model, so that the first client pays no start-up cost.
absl::Status WarmUp(const std::vector<const favor::model::Model*>& models) {
  for (const favor::model::Model* model : models) {
    RETURN_IF_ERROR(favor::WarmUpModel(*model));
  }
  return absl::OkStatus();
}

// Every folder of the repository may label the per-model series, those that
// fail to load included (a later reload may load them).
absl::StatusOr<std::unique_ptr<favor::metrics::Metrics>> NewMetrics(
    const std::vector<std::string>& models) {
  favor::metrics::Metrics::Options options;
  // Served by favor::http::MetricsServer (see there why not by
  // prometheus-cpp).
  options.serve_http = false;
  options.models = models;
  return favor::metrics::Metrics::Create(options);
}

absl::StatusOr<std::unique_ptr<favor::http::MetricsServer>> StartMetricsHttp(
    const favor::metrics::Metrics* metrics) {
  favor::http::HttpServer::Options options =
      favor::http::MetricsServer::DefaultOptions();
  options.bind_address = absl::GetFlag(FLAGS_bind_address);
  options.port = absl::GetFlag(FLAGS_metrics_port);
  ASSIGN_OR_RETURN(auto http,
                   favor::http::MetricsServer::Create(options, metrics));
  LOG(INFO) << "event=metrics_started address=" << options.bind_address
            << " port=" << http->port() << " path=/metrics";
  return http;
}

// After the models load: their weights are in the resident set it counts.
absl::StatusOr<std::unique_ptr<favor::batching::MemoryBudget>>
MemoryBudgetFromFlags(bool huge_pages, favor::metrics::Metrics* metrics) {
  favor::MemoryBudgetSetup setup;
  setup.max_memory_bytes = absl::GetFlag(FLAGS_max_memory_bytes);
  if (huge_pages) {
    setup.allocator_cache_bytes =
        favor::attention::HugePageAllocatorOptions().max_cached_bytes;
  }
  return favor::StartMemoryBudget(setup, metrics);
}

// What GET /info says of the server (server_info.h).
favor::http::ServerInfo ServerInfoOf(
    const FavorService::Options& options,
    const favor::batching::MemoryBudget* budget) {
  favor::http::ServerInfo info;
  info.version = favor::FavorVersion();
  info.git_revision = favor::FavorGitRevision();
  info.memory_budget_bytes = budget != nullptr ? budget->max_bytes() : 0;
  info.tokenization_workers = options.tokenizer_threads;
  return info;
}

// What GET /health reports: the gRPC health status of the whole server.
std::atomic<bool> serving_now{false};

// Health of the whole server ("") and of the Favor service.
void SetHealth(grpc::Server* server, bool serving) {
  serving_now.store(serving);
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  health->SetServingStatus(std::string(favor::v1::Favor::service_full_name()),
                           serving);
}

// The tokens of --auth_tokens_file; empty when the flag is (no
// authentication). Read before the models load, so that a bad file fails
// fast.
absl::StatusOr<std::vector<std::string>> TokensFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_auth_tokens_file);
  if (path.empty()) {
    LOG(INFO) << "event=auth_disabled reason=\"no --auth_tokens_file\"";
    return std::vector<std::string>();
  }
  ASSIGN_OR_RETURN(std::vector<std::string> tokens,
                   favor::service::ReadBearerTokens(path));
  // The count only: tokens are never logged.
  LOG(INFO) << "event=auth_enabled tokens=" << tokens.size()
            << " file=" << path;
  return tokens;
}

favor::http::HttpServer::TlsFiles HttpTlsFromFlags() {
  return {absl::GetFlag(FLAGS_tls_cert_file), absl::GetFlag(FLAGS_tls_key_file),
          absl::GetFlag(FLAGS_tls_client_ca_file)};
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
CredentialsFromFlags() {
  favor::service::TlsOptions tls;
  tls.cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  tls.key_file = absl::GetFlag(FLAGS_tls_key_file);
  tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  ASSIGN_OR_RETURN(auto credentials,
                   favor::service::MakeServerCredentials(tls));
  LOG(INFO) << "event=grpc_credentials tls="
            << (tls.cert_file.empty() ? "off" : "on") << " client_certificates="
            << (tls.client_ca_file.empty() ? "off" : "required");
  return credentials;
}

// `service` is the Favor service, which checks bearer tokens itself when
// authentication is on; health and reflection stay open.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpc(
    grpc::Service* service,
    const std::shared_ptr<grpc::ServerCredentials>& credentials) {
  const int grpc_port = absl::GetFlag(FLAGS_port);  // CheckFlagRanges
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default: a second server on a port in use
  // would start and take a share of its connections, with other models.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string host = absl::GetFlag(FLAGS_bind_address);
  // An IPv6 address needs brackets before the port.
  const std::string address = absl::StrCat(
      absl::StrContains(host, ':') ? absl::StrCat("[", host, "]") : host, ":",
      grpc_port);
  int port = 0;
  builder.AddListeningPort(address, credentials, &port);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  builder.SetMaxSendMessageSize(absl::GetFlag(FLAGS_max_message_bytes));
  const int64_t max_age_seconds =
      absl::GetFlag(FLAGS_max_connection_age_seconds);
  if (max_age_seconds > 0) {
    const auto millis = [](int64_t seconds) {
      return static_cast<int>(std::min<int64_t>(seconds * 1000, INT32_MAX));
    };
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               millis(max_age_seconds));
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
        millis(absl::GetFlag(FLAGS_drain_timeout_seconds)));
  }
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address,
                     " (--bind_address, --port): is the port in use?"));
  }
  SetHealth(server.get(), false);
  LOG(INFO) << "event=grpc_started address="
            << absl::GetFlag(FLAGS_bind_address) << " port=" << port;
  return server;
}

// Reloads the repository on SIGHUP and every --model_repository_poll_seconds
// until SIGTERM or SIGINT, whose number it returns.
// The passes run on a ReloadWorker's thread, so that SIGTERM is answered
// at once whatever a pass is loading; the worker is never destroyed (the
// drain ends in _exit).
int ServeUntilShutdown(favor::ModelReloader* reloader, FavorService* service) {
  const int64_t poll_seconds =
      absl::GetFlag(FLAGS_model_repository_poll_seconds);
  const absl::Duration poll =
      poll_seconds > 0 ? absl::Seconds(poll_seconds) : absl::InfiniteDuration();
  auto* worker = new favor::ReloadWorker([reloader, service](bool sighup) {
    // A poll that finds nothing new logs nothing at INFO (Reload).
    LOG_IF(INFO, sighup || VLOG_IS_ON(1))
        << "event=model_reload_started reason=" << (sighup ? "SIGHUP" : "poll");
    reloader->Reload(service, /*retry_failed=*/sighup);
  });
  while (true) {
    const int signal = favor::WaitForSignal(poll);
    if (signal != 0 && signal != SIGHUP) return signal;
    worker->Request(/*retry_failed=*/signal == SIGHUP);
  }
}

// The flags that no Options struct checks (flag_range.h): a negative
// --threads or --drain_timeout_seconds was taken as its default or as 0.
absl::Status CheckFlagRanges() {
  RETURN_IF_ERROR(favor::CheckHttpFlagRanges());
  RETURN_IF_ERROR(favor::CheckServiceFlagRanges());
  return favor::CheckFlagRanges({
      {"port", absl::GetFlag(FLAGS_port), 0, 65535},
      {"metrics_port", absl::GetFlag(FLAGS_metrics_port), 0, 65535},
      {"model_repository_poll_seconds",
       absl::GetFlag(FLAGS_model_repository_poll_seconds), 0},
      {"threads", absl::GetFlag(FLAGS_threads), 0, 4096},
      {"cpu_block_tokens", absl::GetFlag(FLAGS_cpu_block_tokens), 1},
      {"cpu_sub_batch_tokens", absl::GetFlag(FLAGS_cpu_sub_batch_tokens), 0},
      {"max_memory_bytes", absl::GetFlag(FLAGS_max_memory_bytes), -1},
      {"drain_timeout_seconds", absl::GetFlag(FLAGS_drain_timeout_seconds), 0},
      {"max_connection_age_seconds",
       absl::GetFlag(FLAGS_max_connection_age_seconds), 0},
      {"max_message_bytes", absl::GetFlag(FLAGS_max_message_bytes), 1},
      {"slow_call_ms", absl::GetFlag(FLAGS_slow_call_ms), 0},
  });
}

absl::Status Run() {
  RETURN_IF_ERROR(CheckFlagRanges());
  RETURN_IF_ERROR(favor::InstallShutdownSignalHandlers());
  favor::attention::CpuParallelismOptions parallelism;
  parallelism.num_threads = absl::GetFlag(FLAGS_threads);
  const int threads = favor::attention::ConfigureCpuParallelism(parallelism);
  const bool huge_pages = favor::attention::InstallHugePageCpuAllocator() ==
                          favor::attention::HugePageAllocatorState::kInstalled;
  LOG(INFO) << "event=start threads=" << threads
            << " huge_pages=" << (huge_pages ? "on" : "off")
            << " model_repository=" << absl::GetFlag(FLAGS_model_repository)
            << " device=" << absl::GetFlag(FLAGS_device);
  ASSIGN_OR_RETURN(auto credentials, CredentialsFromFlags());
  // Never freed: calls still answering after the drain may write to it.
  ASSIGN_OR_RETURN(std::unique_ptr<favor::AccessLog> access_log_owned,
                   AccessLogFromFlags());
  favor::AccessLog* access_log = access_log_owned.release();
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, TokensFromFlags());
  ASSIGN_OR_RETURN(std::vector<std::string> folders,
                   favor::model::ModelRepository::ListModels(
                       absl::GetFlag(FLAGS_model_repository)));
  ASSIGN_OR_RETURN(auto metrics, NewMetrics(folders));
  // Declared before the service, whose freed revisions call it back.
  ASSIGN_OR_RETURN(auto reloader, NewReloader(metrics.get()));
  ASSIGN_OR_RETURN(favor::ModelReloader::Loaded loaded, reloader->LoadAll());
  std::vector<const favor::model::Model*> models;
  std::vector<std::string> names;
  for (const auto& servable : loaded.models) {
    models.push_back(servable.model.get());
    names.push_back(servable.model->name());
  }
  FavorService::Options options =
      favor::ServiceOptionsFromFlags(absl::GetFlag(FLAGS_device));
  options.bearer_tokens = std::move(tokens);
  options.max_answer_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  options.access_log = access_log;
  ASSIGN_OR_RETURN(auto memory_budget,
                   MemoryBudgetFromFlags(huge_pages, metrics.get()));
  reloader->set_memory_budget(memory_budget.get());
  options.embed_batching.memory_budget = memory_budget.get();
  ASSIGN_OR_RETURN(auto metrics_http, StartMetricsHttp(metrics.get()));
  ASSIGN_OR_RETURN(
      auto service,
      FavorService::Create(options, std::move(loaded.models), metrics.get()));
  for (const auto& [name, failure] : loaded.failures) {
    service->RecordLoadFailure(name, failure);
  }
  ASSIGN_OR_RETURN(auto server, StartGrpc(service.get(), credentials));
  ASSIGN_OR_RETURN(auto http_api,
                   favor::StartHttpApi(
                       server.get(), absl::GetFlag(FLAGS_bind_address),
                       options.bearer_tokens, service->in_process_key(),
                       favor::http::CallLimits{options.max_inputs_per_call,
                                               options.max_tokens_per_call,
                                               options.max_spans_per_input},
                       HttpTlsFromFlags(),
                       ServerInfoOf(options, memory_budget.get()),
                       [] { return serving_now.load(); }, metrics.get(),
                       access_log));
  RETURN_IF_ERROR(WarmUp(models));
  favor::LogMemoryEstimates(models);
  SetHealth(server.get(), true);
  LOG(INFO) << "event=serving models=" << absl::StrJoin(names, ",")
            << " default_model=" << service->default_model();
  const int signal = ServeUntilShutdown(reloader.get(), service.get());
  LOG(INFO) << "event=shutdown_started signal=" << signal;
  favor::DrainOptions drain;
  drain.set_not_serving = [&server] { SetHealth(server.get(), false); };
  drain.service = service.get();
  drain.http = http_api != nullptr ? http_api->server.get() : nullptr;
  drain.drain_timeout =
      absl::Seconds(absl::GetFlag(FLAGS_drain_timeout_seconds));
  favor::DrainAndExit(std::move(drain));
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Serves the Favor gRPC API (favor.v1.Favor, health, reflection) and "
      "its HTTP/JSON front (docs/http.md) for the models of "
      "--model_repository.\nUsage: favor-server "
      "--model_repository=DIR [flags]");
  // --help lists the flags of the files that define them (absl's default
  // looks for a file named after the binary).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/app/main.cc") ||
           absl::EndsWith(file, "server/app/http_flags.cc") ||
           absl::EndsWith(file, "server/app/service_flags.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  // absl's default says how absl itself was built ("Debug build").
  usage.version_string = [] {
    return absl::StrCat("favor-server ", favor::FavorVersion(), " (",
                        favor::FavorGitRevision(), ")\n");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  favor::InstallProtobufLogHandler();
  absl::Status status = Run();
  if (!status.ok()) {
    LOG(ERROR) << "event=exit error=\"" << status << "\"";
    return 1;
  }
  return 0;
}
