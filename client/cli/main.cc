// favor-cli: one call to a Favor server from the command line, on
// favor::Client. Flags live here only and are copied into the library's
// options.
//
//   favor-cli [flags] health [SERVICE]   exit 0 only when SERVING
//   favor-cli [flags] models             ListModels, as JSON
//   favor-cli [flags] model NAME         GetModel, as JSON
//   favor-cli [flags] embed [INPUT...]   Embed (text or token ids), as JSON
//   favor-cli [flags] tokenize [TEXT...] Tokenize, as JSON
//   favor-cli [flags] attend             Attend, a JSON summary
//
// The exit code is the gRPC status code of the failure (0 OK, 3
// INVALID_ARGUMENT for bad usage or input, 5 NOT_FOUND, 9
// FAILED_PRECONDITION (text for a model without a tokenizer), 14 UNAVAILABLE,
// 16 UNAUTHENTICATED, ...), and the failure is one line on stderr.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/cli/attend_input.h"
#include "client/cli/connection.h"
#include "client/cli/connection_flags.h"
#include "client/cli/embed_input.h"
#include "client/cli/flag_parsing.h"
#include "client/cli/json_output.h"
#include "client/cli/tool_main.h"
#include "favor/client.h"
#include "nlohmann/json.hpp"
#include "server/attention/kernel.h"

// ---- Connection (the rest: client/cli/connection_flags.h) ----
ABSL_FLAG(absl::Duration, deadline, absl::ZeroDuration(),
          "deadline of the call, retries included (e.g. 500ms, 30s); 0: 3s "
          "for health, 30s otherwise");
ABSL_FLAG(int, max_attempts, 5,
          "attempts per call; UNAVAILABLE and RESOURCE_EXHAUSTED are retried "
          "with backoff (health is never retried)");
ABSL_FLAG(bool, pretty, false, "indent the JSON output");

// ---- embed ----
ABSL_FLAG(std::string, model, "", "model name; empty: the server's default");
ABSL_FLAG(std::string, input_file, "",
          "embed: inputs, one per line: JSON ([ids...], \"text\", "
          "{\"text\": ..., \"spans\": [[b, e], ...]} or {\"token_ids\": "
          "[...]}) or plain, read like an argument; tokenize: one text, the "
          "whole file; '-' is stdin");
ABSL_FLAG(bool, text, false,
          "embed: read every plain input as text, even one that starts with a "
          "digit");
ABSL_FLAG(bool, ids, false,
          "embed: read every plain input as token ids (commas or spaces "
          "between them)");
ABSL_FLAG(std::string, spans, "",
          "embed: late chunking, BEGIN:END,... (bytes of a text, positions of "
          "ids): one pooled embedding per span, for every input without "
          "spans of its own");
ABSL_FLAG(int32_t, dimensions, 0,
          "embed: keep the first N values of each embedding (Matryoshka), "
          "renormalised; 0: all");
ABSL_FLAG(int64_t, chunk_overlap_tokens, 0,
          "embed: tokens shared by consecutive windows with "
          "--truncation=chunk");
ABSL_FLAG(std::string, pooling, "default",
          "embed: default, mean, cls, attention, none, max or last_token");
ABSL_FLAG(std::string, normalization, "default", "embed: default, none or l2");
ABSL_FLAG(std::string, truncation, "none",
          "embed: none (refuse long inputs), left, right or chunk (embed "
          "windows of the model's length and pool them)");
ABSL_FLAG(std::vector<std::string>, embedding_types, {},
          "embed: forms of each embedding to print, comma-separated: float, "
          "int8, uint8, binary, ubinary (docs/http.md); empty: float only");
ABSL_FLAG(bool, token_embeddings, false,
          "embed: also print each input's per-position output vectors");
ABSL_FLAG(bool, high_priority, false, "queue the request at high priority");

// ---- tokenize ----
ABSL_FLAG(bool, without_special_tokens, false,
          "tokenize: leave out the special tokens the model adds ([CLS], "
          "[SEP])");

// ---- attend ----
ABSL_FLAG(std::string, shape, "1,1,16,8",
          "attend: query shape BATCH,HEADS,QUERY_LENGTH,HEAD_DIM");
ABSL_FLAG(int64_t, key_length, 0, "attend: key length; 0: QUERY_LENGTH");
ABSL_FLAG(int64_t, value_dim, 0, "attend: value width; 0: HEAD_DIM");
ABSL_FLAG(std::string, kernel, "",
          absl::StrCat("attend: ", favor::attention::KernelNames(),
                       "; empty: favor+"));
ABSL_FLAG(int64_t, num_random_features, 0,
          "attend: rows of the random projection; 0: the server's default");
ABSL_FLAG(uint64_t, projection_seed, 0, "attend: seed of the projection");
ABSL_FLAG(bool, causal, false, "attend: causal attention");
ABSL_FLAG(uint64_t, seed, 1,
          "attend: seed of the random Q, K, V (when no file is given)");
ABSL_FLAG(std::string, query_file, "",
          "attend: raw little-endian float32 Q of --shape (else random)");
ABSL_FLAG(std::string, key_file, "", "attend: raw float32 K (else random)");
ABSL_FLAG(std::string, value_file, "", "attend: raw float32 V (else random)");
ABSL_FLAG(std::string, output_file, "",
          "attend: write the output as raw little-endian float32 here");

namespace {

using favor::cli::UsageError;

constexpr char kProgram[] = "favor-cli";

// Deadlines when --deadline is 0: health checks must be quick (a container
// health check has its own timeout, usually a few seconds); other calls may
// wait for a busy server.
constexpr absl::Duration kHealthDeadline = absl::Seconds(3);
constexpr absl::Duration kCallDeadline = absl::Seconds(30);

void PrintJson(const nlohmann::json& json) {
  const std::string text =
      absl::GetFlag(FLAGS_pretty) ? json.dump(2) : json.dump();
  std::printf("%s\n", text.c_str());
}

absl::StatusOr<std::unique_ptr<favor::Client>> NewClient(
    absl::Duration default_deadline) {
  favor::cli::ConnectionSettings settings =
      favor::cli::ConnectionSettingsFromFlags();
  const absl::Duration deadline = absl::GetFlag(FLAGS_deadline);
  settings.deadline =
      deadline == absl::ZeroDuration() ? default_deadline : deadline;
  settings.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  settings.user_agent_prefix = "favor-cli/0.1.0";
  return favor::cli::NewClient(settings);
}

absl::Status CheckArgumentCount(const std::vector<std::string>& arguments,
                                size_t low, size_t high) {
  if (arguments.size() >= low && arguments.size() <= high) {
    return absl::OkStatus();
  }
  return UsageError(absl::StrCat("'", arguments[0], "' takes ", low - 1,
                                 low == high ? "" : absl::StrCat("-", high - 1),
                                 " argument(s), got ", arguments.size() - 1));
}

// health [SERVICE]: SERVING prints the status and returns OK; anything else
// is UNAVAILABLE (the server answered but is not serving) or the call's
// failure.
absl::Status Health(const std::vector<std::string>& arguments) {
  absl::Status usage = CheckArgumentCount(arguments, 1, 2);
  if (!usage.ok()) return usage;
  const std::string service = arguments.size() == 2 ? arguments[1] : "";
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      NewClient(kHealthDeadline);
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::ServingStatus> status = (*client)->CheckHealth(service);
  if (!status.ok()) return status.status();
  if (*status != favor::ServingStatus::kServing) {
    return absl::UnavailableError(
        absl::StrCat("health of service '", service, "' is ",
                     favor::ServingStatusName(*status)));
  }
  std::printf("%s\n", favor::ServingStatusName(*status));
  return absl::OkStatus();
}

absl::Status Models(const std::vector<std::string>& arguments) {
  absl::Status usage = CheckArgumentCount(arguments, 1, 1);
  if (!usage.ok()) return usage;
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      NewClient(kCallDeadline);
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::ModelList> list = (*client)->ListModels();
  if (!list.ok()) return list.status();
  PrintJson(favor::cli::ModelListToJson(*list));
  return absl::OkStatus();
}

absl::Status Model(const std::vector<std::string>& arguments) {
  absl::Status usage = CheckArgumentCount(arguments, 2, 2);
  if (!usage.ok()) return usage;
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      NewClient(kCallDeadline);
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::ModelInfo> model = (*client)->GetModel(arguments[1]);
  if (!model.ok()) return model.status();
  PrintJson(favor::cli::ModelInfoToJson(*model));
  return absl::OkStatus();
}

// The value that `name` stands for among the `choices` of --`flag`; bad
// usage listing them otherwise.
template <typename Enum>
absl::StatusOr<Enum> ParseChoice(
    absl::string_view flag, const std::string& name,
    std::initializer_list<std::pair<absl::string_view, Enum>> choices) {
  std::vector<absl::string_view> names;
  for (const auto& [choice, value] : choices) {
    if (name == choice) return value;
    names.push_back(choice);
  }
  return UsageError(absl::StrCat("--", flag, "=", name, " is not one of ",
                                 absl::StrJoin(names, ", ")));
}

absl::StatusOr<favor::EmbedOptions> EmbedOptionsFromFlags() {
  using favor::Normalization;
  using favor::Pooling;
  using favor::Truncation;
  favor::EmbedOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  absl::StatusOr<Pooling> pooling =
      ParseChoice<Pooling>("pooling", absl::GetFlag(FLAGS_pooling),
                           {{"default", Pooling::kModelDefault},
                            {"mean", Pooling::kMean},
                            {"cls", Pooling::kCls},
                            {"attention", Pooling::kAttention},
                            {"none", Pooling::kNone},
                            {"max", Pooling::kMax},
                            {"last_token", Pooling::kLastToken}});
  if (!pooling.ok()) return pooling.status();
  options.pooling = *pooling;
  absl::StatusOr<Normalization> normalization = ParseChoice<Normalization>(
      "normalization", absl::GetFlag(FLAGS_normalization),
      {{"default", Normalization::kModelDefault},
       {"none", Normalization::kNone},
       {"l2", Normalization::kL2}});
  if (!normalization.ok()) return normalization.status();
  options.normalization = *normalization;
  absl::StatusOr<Truncation> truncation =
      ParseChoice<Truncation>("truncation", absl::GetFlag(FLAGS_truncation),
                              {{"none", Truncation::kNone},
                               {"left", Truncation::kLeft},
                               {"right", Truncation::kRight},
                               {"chunk", Truncation::kChunk}});
  if (!truncation.ok()) return truncation.status();
  options.truncation = *truncation;
  options.include_token_embeddings = absl::GetFlag(FLAGS_token_embeddings);
  options.priority = absl::GetFlag(FLAGS_high_priority)
                         ? favor::Priority::kHigh
                         : favor::Priority::kNormal;
  options.dimensions = absl::GetFlag(FLAGS_dimensions);
  options.chunk_overlap_tokens = absl::GetFlag(FLAGS_chunk_overlap_tokens);
  for (const std::string& name : absl::GetFlag(FLAGS_embedding_types)) {
    absl::StatusOr<favor::EmbeddingType> type =
        ParseChoice<favor::EmbeddingType>(
            "embedding_types", name,
            {{"float", favor::EmbeddingType::kFloat},
             {"int8", favor::EmbeddingType::kInt8},
             {"uint8", favor::EmbeddingType::kUint8},
             {"binary", favor::EmbeddingType::kBinary},
             {"ubinary", favor::EmbeddingType::kUbinary}});
    if (!type.ok()) return type.status();
    options.embedding_types.push_back(*type);
  }
  return options;
}

// How plain arguments and lines are read: --text, --ids, or by their first
// character.
absl::StatusOr<favor::cli::PlainInput> PlainInputFromFlags() {
  const bool text = absl::GetFlag(FLAGS_text);
  const bool ids = absl::GetFlag(FLAGS_ids);
  if (text && ids) return UsageError("give --text or --ids, not both");
  if (text) return favor::cli::PlainInput::kText;
  if (ids) return favor::cli::PlainInput::kIds;
  return favor::cli::PlainInput::kAuto;
}

// The file `embed` and `tokenize` read when they have no argument:
// --input_file, else stdin unless it is a terminal; empty when neither.
std::string InputFileFromFlags() {
  const std::string file = absl::GetFlag(FLAGS_input_file);
  if (!file.empty() || isatty(STDIN_FILENO)) return file;
  return "-";
}

// The inputs of `embed`: its arguments, --input_file, or stdin; --spans
// for those without spans of their own.
absl::StatusOr<std::vector<favor::EmbedInput>> EmbedInputs(
    const std::vector<std::string>& arguments) {
  absl::StatusOr<favor::cli::PlainInput> plain = PlainInputFromFlags();
  if (!plain.ok()) return plain.status();
  absl::StatusOr<std::vector<favor::InputSpan>> spans =
      favor::cli::ParseSpans(absl::GetFlag(FLAGS_spans));
  if (!spans.ok()) return spans.status();
  const std::vector<std::string> given(arguments.begin() + 1, arguments.end());
  if (!given.empty() && !absl::GetFlag(FLAGS_input_file).empty()) {
    return UsageError("give inputs as arguments or --input_file, not both");
  }
  const std::string file = InputFileFromFlags();
  absl::StatusOr<std::vector<favor::EmbedInput>> inputs;
  if (!given.empty()) {
    inputs = favor::cli::ParseInputArguments(given, *plain);
  } else if (!file.empty()) {
    inputs = favor::cli::ReadInputFile(file, *plain);
  } else {
    return UsageError(
        "no input: give texts or token ids as arguments, --input_file, or "
        "JSON lines on stdin");
  }
  if (inputs.ok() && inputs->empty()) {
    return absl::InvalidArgumentError("no input: every line was blank");
  }
  if (!inputs.ok()) return inputs;
  for (favor::EmbedInput& input : *inputs) {
    if (input.spans.empty()) input.spans = *spans;
  }
  return inputs;
}

absl::Status Embed(const std::vector<std::string>& arguments) {
  absl::StatusOr<favor::EmbedOptions> options = EmbedOptionsFromFlags();
  if (!options.ok()) return options.status();
  absl::StatusOr<std::vector<favor::EmbedInput>> inputs =
      EmbedInputs(arguments);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      NewClient(kCallDeadline);
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::EmbedResult> result =
      (*client)->Embed(*inputs, *options);
  if (!result.ok()) return result.status();
  absl::StatusOr<nlohmann::json> json = favor::cli::EmbedResultToJson(*result);
  if (!json.ok()) return json.status();
  PrintJson(*json);
  return absl::OkStatus();
}

// tokenize [TEXT...]: each argument is one text; without any, the whole of
// --input_file or stdin is one (so that offsets are the file's bytes).
absl::Status Tokenize(const std::vector<std::string>& arguments) {
  std::vector<std::string> texts(arguments.begin() + 1, arguments.end());
  const std::string file = InputFileFromFlags();
  if (!texts.empty() && !absl::GetFlag(FLAGS_input_file).empty()) {
    return UsageError("give texts as arguments or --input_file, not both");
  }
  if (texts.empty() && file.empty()) {
    return UsageError(
        "no input: give texts as arguments, --input_file, or text on stdin");
  }
  if (texts.empty()) {
    std::string source;
    absl::StatusOr<std::string> text = favor::cli::ReadInputText(file, &source);
    if (!text.ok()) return text.status();
    if (text->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("no input: ", source, " is empty"));
    }
    texts.push_back(*std::move(text));
  }
  favor::TokenizeOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  options.without_special_tokens = absl::GetFlag(FLAGS_without_special_tokens);
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      NewClient(kCallDeadline);
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::TokenizeResult> result =
      (*client)->Tokenize(texts, options);
  if (!result.ok()) return result.status();
  PrintJson(favor::cli::TokenizeResultToJson(*result));
  return absl::OkStatus();
}

// One of Q, K, V: from its file when given, else random from the seed.
absl::StatusOr<favor::Tensor> AttendTensor(const std::string& file,
                                           const std::vector<int64_t>& shape,
                                           uint64_t seed) {
  if (!file.empty()) return favor::cli::ReadTensorFile(file, shape);
  return favor::cli::RandomTensor(shape, seed);
}

absl::StatusOr<favor::AttendRequest> AttendRequestFromFlags() {
  absl::StatusOr<favor::cli::AttendShapes> shapes =
      favor::cli::ParseAttendShapes(absl::GetFlag(FLAGS_shape),
                                    absl::GetFlag(FLAGS_key_length),
                                    absl::GetFlag(FLAGS_value_dim));
  if (!shapes.ok()) return shapes.status();
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  favor::AttendRequest request;
  absl::StatusOr<favor::Tensor> query =
      AttendTensor(absl::GetFlag(FLAGS_query_file), shapes->query, seed);
  if (!query.ok()) return query.status();
  absl::StatusOr<favor::Tensor> key =
      AttendTensor(absl::GetFlag(FLAGS_key_file), shapes->key, seed + 1);
  if (!key.ok()) return key.status();
  absl::StatusOr<favor::Tensor> value =
      AttendTensor(absl::GetFlag(FLAGS_value_file), shapes->value, seed + 2);
  if (!value.ok()) return value.status();
  request.query = *std::move(query);
  request.key = *std::move(key);
  request.value = *std::move(value);
  request.kernel = absl::GetFlag(FLAGS_kernel);
  request.num_random_features = absl::GetFlag(FLAGS_num_random_features);
  request.projection_seed = absl::GetFlag(FLAGS_projection_seed);
  request.causal = absl::GetFlag(FLAGS_causal);
  request.priority = absl::GetFlag(FLAGS_high_priority)
                         ? favor::Priority::kHigh
                         : favor::Priority::kNormal;
  return request;
}

absl::Status Attend(const std::vector<std::string>& arguments) {
  absl::Status usage = CheckArgumentCount(arguments, 1, 1);
  if (!usage.ok()) return usage;
  absl::StatusOr<favor::AttendRequest> request = AttendRequestFromFlags();
  if (!request.ok()) return request.status();
  absl::StatusOr<std::unique_ptr<favor::Client>> client =
      NewClient(kCallDeadline);
  if (!client.ok()) return client.status();
  absl::StatusOr<favor::AttendResult> result = (*client)->Attend(*request);
  if (!result.ok()) return result.status();
  absl::StatusOr<nlohmann::json> summary =
      favor::cli::AttendSummaryToJson(*result);
  if (!summary.ok()) return summary.status();
  const std::string output_file = absl::GetFlag(FLAGS_output_file);
  if (!output_file.empty()) {
    absl::Status written =
        favor::cli::WriteTensorFile(output_file, result->output);
    if (!written.ok()) return written;
    (*summary)["output_file"] = output_file;
  }
  PrintJson(*summary);
  return absl::OkStatus();
}

absl::Status Run(const std::vector<std::string>& arguments) {
  if (arguments.empty()) {
    return UsageError(
        "no command: give one of health, models, model, embed, tokenize, "
        "attend");
  }
  const std::string& command = arguments[0];
  if (command == "health") return Health(arguments);
  if (command == "models") return Models(arguments);
  if (command == "model") return Model(arguments);
  if (command == "embed") return Embed(arguments);
  if (command == "tokenize") return Tokenize(arguments);
  if (command == "attend") return Attend(arguments);
  return UsageError(absl::StrCat("unknown command '", command,
                                 "': give one of health, models, model, "
                                 "embed, tokenize, attend"));
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "One call to a Favor server.\n"
      "Usage: favor-cli [flags] COMMAND [ARGS]\n"
      "  health [SERVICE]  grpc.health.v1 Check (\"\" or favor.v1.Favor); "
      "exit 0 only when SERVING\n"
      "  models            every loaded model, as JSON\n"
      "  model NAME        one model, as JSON\n"
      "  embed [INPUT...]  embeddings as JSON; each argument is one input: "
      "token ids (separated by commas or spaces) when it starts with a "
      "digit, else text (--text, --ids: always one way); else --input_file, "
      "else JSON lines on stdin\n"
      "  tokenize [TEXT...] the model's tokens of each text (ids, tokens, "
      "byte offsets) as JSON; else the whole --input_file or stdin\n"
      "  attend            attention on random (or --*_file) Q, K, V of "
      "--shape; prints a summary, --output_file writes the output\n"
      "Exit code: the gRPC status code (0 OK, 3 INVALID_ARGUMENT, 5 "
      "NOT_FOUND, 9 FAILED_PRECONDITION, 14 UNAVAILABLE, 16 UNAUTHENTICATED, "
      "...); errors are one line on stderr.");
  return favor::cli::RunToolMain(
      argc, argv, kProgram,
      {"client/cli/main.cc", favor::cli::ConnectionFlagsFile()}, Run);
}
