#include "server/app/service_flags.h"

#include <cstdint>
#include <string>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "server/app/flag_range.h"
#include "server/batching/batcher.h"

namespace {

const favor::batching::Batcher::Options kBatching;
const favor::service::FavorService::Options kService;

}  // namespace

ABSL_FLAG(std::string, default_model, kService.default_model,
          "model of requests that name none; empty: 'default' if loaded, "
          "else the first by name");

ABSL_FLAG(int64_t, max_batch_tokens, kBatching.max_batch_tokens,
          "token budget of one batch (a longer input runs alone)");
ABSL_FLAG(int64_t, max_batch_requests, kBatching.max_batch_requests,
          "most inputs in one batch");
ABSL_FLAG(int64_t, max_queue_delay_micros,
          absl::ToInt64Microseconds(kBatching.max_queue_delay),
          "how long an idle worker waits for company for a batch short of "
          "the limits (0: it takes what is queued at once; inputs that "
          "arrive while it is busy join its next batch either way)");
ABSL_FLAG(int64_t, max_enqueue_group_wait_micros,
          absl::ToInt64Microseconds(kBatching.max_enqueue_group_wait),
          "how long an idle worker waits for the rest of a call's inputs "
          "while the call is still enqueueing them, so that the call runs as "
          "one batch (0: it takes those queued so far)");
ABSL_FLAG(int64_t, max_queue_requests, kBatching.max_queue_requests,
          "most inputs queued per model; beyond: RESOURCE_EXHAUSTED with a "
          "retry hint");
ABSL_FLAG(int64_t, max_queue_tokens, kBatching.max_queue_tokens,
          "most tokens queued per model; beyond: RESOURCE_EXHAUSTED with a "
          "retry hint");
ABSL_FLAG(int64_t, max_request_age_millis,
          absl::ToInt64Milliseconds(kBatching.max_request_age),
          "a queued input this old leads the next batch whatever its priority");
ABSL_FLAG(int64_t, max_inputs_per_call, kService.max_inputs_per_call,
          "most inputs in one Embed call");
ABSL_FLAG(int64_t, max_tokens_per_call, kService.max_tokens_per_call,
          "most tokens (after truncation) in one Embed call");
ABSL_FLAG(int64_t, max_text_bytes_per_call, kService.max_text_bytes_per_call,
          "most bytes of text over all inputs of one Embed call, stream "
          "message or Tokenize call");
ABSL_FLAG(int64_t, max_spans_per_input, kService.max_spans_per_input,
          "most late-chunking spans in one input");
ABSL_FLAG(int, tokenizer_threads, kService.tokenizer_threads,
          "threads that tokenise text (never the gRPC or batch threads)");
ABSL_FLAG(int64_t, max_queued_tokenizations, kService.max_queued_tokenizations,
          "calls with text waiting for a tokenizer thread; beyond: "
          "RESOURCE_EXHAUSTED with a retry hint");
ABSL_FLAG(int64_t, max_stream_messages_in_flight,
          kService.max_stream_messages_in_flight,
          "EmbedStream messages read but not yet answered, per stream; the "
          "server stops reading a stream at this many");
ABSL_FLAG(int64_t, max_stream_answer_bytes_in_flight,
          kService.max_stream_answer_bytes_in_flight,
          "bytes that the answers of one EmbedStream's messages read and not "
          "yet written may take (each counted at its bound until computed); "
          "the server stops reading the stream at this many");
ABSL_FLAG(int64_t, max_attend_queue_requests,
          kService.attend_batching.max_queue_requests,
          "most Attend calls queued; beyond: RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_attend_tensor_elements,
          kService.attend_limits.max_tensor_elements,
          "most elements of one Attend tensor (Q, K, V or the output)");

namespace favor {

absl::Status CheckServiceFlagRanges() {
  return CheckFlagRanges({
      {"max_batch_tokens", absl::GetFlag(FLAGS_max_batch_tokens), 1},
      {"max_batch_requests", absl::GetFlag(FLAGS_max_batch_requests), 1},
      {"max_queue_delay_micros", absl::GetFlag(FLAGS_max_queue_delay_micros),
       0},
      {"max_enqueue_group_wait_micros",
       absl::GetFlag(FLAGS_max_enqueue_group_wait_micros), 0},
      {"max_queue_requests", absl::GetFlag(FLAGS_max_queue_requests), 1},
      {"max_queue_tokens", absl::GetFlag(FLAGS_max_queue_tokens), 1},
      {"max_request_age_millis", absl::GetFlag(FLAGS_max_request_age_millis),
       1},
      {"max_inputs_per_call", absl::GetFlag(FLAGS_max_inputs_per_call), 1},
      {"max_tokens_per_call", absl::GetFlag(FLAGS_max_tokens_per_call), 1},
      {"max_text_bytes_per_call", absl::GetFlag(FLAGS_max_text_bytes_per_call),
       1},
      {"max_spans_per_input", absl::GetFlag(FLAGS_max_spans_per_input), 0},
      {"tokenizer_threads", absl::GetFlag(FLAGS_tokenizer_threads), 1, 1024},
      {"max_queued_tokenizations",
       absl::GetFlag(FLAGS_max_queued_tokenizations), 1},
      {"max_stream_messages_in_flight",
       absl::GetFlag(FLAGS_max_stream_messages_in_flight), 1},
      {"max_stream_answer_bytes_in_flight",
       absl::GetFlag(FLAGS_max_stream_answer_bytes_in_flight), 1},
      {"max_attend_queue_requests",
       absl::GetFlag(FLAGS_max_attend_queue_requests), 1},
      {"max_attend_tensor_elements",
       absl::GetFlag(FLAGS_max_attend_tensor_elements), 1},
  });
}

service::FavorService::Options ServiceOptionsFromFlags(
    const std::string& device) {
  service::FavorService::Options options;
  options.default_model = absl::GetFlag(FLAGS_default_model);
  options.max_inputs_per_call = absl::GetFlag(FLAGS_max_inputs_per_call);
  options.max_tokens_per_call = absl::GetFlag(FLAGS_max_tokens_per_call);
  options.max_text_bytes_per_call =
      absl::GetFlag(FLAGS_max_text_bytes_per_call);
  options.max_spans_per_input = absl::GetFlag(FLAGS_max_spans_per_input);
  options.tokenizer_threads = absl::GetFlag(FLAGS_tokenizer_threads);
  options.max_queued_tokenizations =
      absl::GetFlag(FLAGS_max_queued_tokenizations);
  options.max_stream_messages_in_flight =
      absl::GetFlag(FLAGS_max_stream_messages_in_flight);
  options.max_stream_answer_bytes_in_flight =
      absl::GetFlag(FLAGS_max_stream_answer_bytes_in_flight);
  batching::Batcher::Options& batching = options.embed_batching;
  batching.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  batching.max_batch_requests = absl::GetFlag(FLAGS_max_batch_requests);
  batching.max_queue_delay =
      absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_micros));
  batching.max_enqueue_group_wait =
      absl::Microseconds(absl::GetFlag(FLAGS_max_enqueue_group_wait_micros));
  batching.max_queue_requests = absl::GetFlag(FLAGS_max_queue_requests);
  batching.max_queue_tokens = absl::GetFlag(FLAGS_max_queue_tokens);
  batching.max_request_age =
      absl::Milliseconds(absl::GetFlag(FLAGS_max_request_age_millis));
  options.attend_batching.max_queue_requests =
      absl::GetFlag(FLAGS_max_attend_queue_requests);
  options.attend_limits.max_tensor_elements =
      absl::GetFlag(FLAGS_max_attend_tensor_elements);
  options.attend_device = device;
  return options;
}

}  // namespace favor
