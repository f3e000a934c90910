"""The mutation campaign's catalogue (issue 18 §5; docs/testing.md).

Each mutant is one small, plausible bug: `original` must occur exactly once in
`file` (tools/mutate.py --check verifies it), and `replacement` takes its
place. `labels` is the ctest -L regex of the suites that should notice;
`exclude` (ctest -E) leaves out the slow end-to-end tests where the unit
tests are the ones meant to catch it; `regex` (ctest -R) narrows further.
`equivalent`, when set, says why a mutant cannot be caught (it then counts
as documented, not as a miss).
"""

KINDS = (
    "dropped stabiliser",
    "swapped operand",
    "off-by-one bound",
    "inverted condition",
    "wrong default",
    "missing lock",
    "lost status",
)

# The end-to-end tests (Python peers, npm clients, the installed package)
# are named <module>.<Name>; unit mutants leave them out.
NO_E2E = r"^(service|client|http|tokenizer)\."


def _m(id, file, kind, original, replacement, labels, exclude="", regex="",
       equivalent=""):
    assert kind in KINDS, kind
    return dict(id=id, file=file, kind=kind, original=original,
                replacement=replacement, labels=labels, exclude=exclude,
                regex=regex, equivalent=equivalent)


ATT = "server/attention/"
BAT = "server/batching/"
SRV = "server/service/"
MET = "server/metrics/"
TOK = "server/tokenizer/"
HTTP = "server/http/"
MOD = "server/model/"
CLI = "client/src/"

MUTANTS = [
    # --- attention -------------------------------------------------------
    _m("attn-exact-no-max-shift", ATT + "exact_attention.cc",
       "dropped stabiliser",
       "    scores.sub_(new_max);\n", "", "attention"),
    _m("attn-exact-causal-diagonal", ATT + "exact_attention.cc",
       "off-by-one bound",
       "cols.view({1, 1, -1}) > rows.view({1, -1, 1})",
       "cols.view({1, 1, -1}) >= rows.view({1, -1, 1})", "attention"),
    _m("attn-exact-causal-key-stop", ATT + "exact_attention.cc",
       "off-by-one bound",
       "options.causal ? std::min(key_length, q_end) : key_length",
       "options.causal ? std::min(key_length, q_end - 1) : key_length",
       "attention"),
    _m("attn-mask-length-of-queries", ATT + "attention.cc", "swapped operand",
       "mask.size(1) != k.size(2) ||", "mask.size(1) != q.size(2) ||",
       "attention"),
    _m("attn-causal-check-inverted", ATT + "attention.cc",
       "inverted condition",
       "if (options.causal && q.size(2) != k.size(2)) {",
       "if (!options.causal && q.size(2) != k.size(2)) {", "attention"),
    _m("attn-trig-query-sin-cos-swapped", ATT + "features.cc",
       "swapped operand",
       "      return at::cat({at::sin(u), at::cos(u)}, -1);\n",
       "      return at::cat({at::cos(u), at::sin(u)}, -1);\n", "attention"),
    _m("attn-elu-key-without-one", ATT + "features.cc", "dropped stabiliser",
       "      return at::elu(u) + 1;\n    case Kernel::kExp:\n"
       "      return at::exp(u - shift);",
       "      return at::elu(u);\n    case Kernel::kExp:\n"
       "      return at::exp(u - shift);", "attention"),
    _m("attn-epsilon-inverted", ATT + "features.cc", "inverted condition",
       "context.traits_.adds_epsilon ? epsilon : 0.0f;",
       "context.traits_.adds_epsilon ? 0.0f : epsilon;", "attention|model",
       regex="Kernel|kernel|Parity|parity|Attend|Attention"),
    _m("attn-causal-chunk-no-diagonal", ATT + "linear_attention.cc",
       "off-by-one bound",
       "at::bmm(t.query_features, t.key_features.transpose(1, 2)).tril_();",
       "at::bmm(t.query_features, t.key_features.transpose(1, 2)).tril_(-1);",
       "attention"),
    _m("attn-rescale-swapped", ATT + "linear_attention.cc", "swapped operand",
       "at::exp(state.shift - new_shift)", "at::exp(new_shift - state.shift)",
       "attention"),
    _m("attn-query-state-no-epsilon", ATT + "linear_attention.cc",
       "dropped stabiliser",
       "    return keys.sums + context_.epsilon() * keys.value_sums;\n",
       "    return keys.sums;\n", "attention|model",
       regex="Kernel|kernel|Parity|parity|Attend|Attention"),
    _m("attn-hyperbolic-key-count", ATT + "kernel.cc", "wrong default",
       "    case Kernel::kFavorHyperbolic:\n      traits.uses_projection = true;",
       "    case Kernel::kFavorHyperbolic:\n      traits.uses_projection = false;",
       "attention"),

    # --- model -----------------------------------------------------------
    _m("model-attention-pool-unscaled", MOD + "pooling.cc",
       "dropped stabiliser",
       "at::softmax(at::mv(rows, query) * scale, 0)",
       "at::softmax(at::mv(rows, query), 0)", "model"),
    _m("model-cls-is-last-token", MOD + "pooling.cc", "off-by-one bound",
       "out.copy_(rows[0]);", "out.copy_(rows[rows.size(0) - 1]);", "model"),
    _m("model-scalenorm-no-floor", MOD + "layers.cc", "dropped stabiliser",
       "at::linalg_vector_norm(x32, 2, {-1}, /*keepdim=*/true).clamp_min(eps);",
       "at::linalg_vector_norm(x32, 2, {-1}, /*keepdim=*/true);", "model"),
    _m("model-gelu-tanh-exact", MOD + "layers.cc", "wrong default",
       'x = at::gelu(x, "tanh");', 'x = at::gelu(x, "none");', "model"),
    _m("model-rotary-second-sign", MOD + "layers.cc", "swapped operand",
       "second.copy_(second * c + first * s);",
       "second.copy_(second * c - first * s);", "model"),
    _m("model-rotary-parts-cos", MOD + "layers.cc", "swapped operand",
       "return {(lc * hc - ls * hs).to(at::kFloat),",
       "return {(lc * hc + ls * hs).to(at::kFloat),", "model"),
    _m("model-token-id-at-vocab-size", MOD + "model_config_validate.cc",
       "off-by-one bound",
       "(id >= 0 && id < vocab_size)", "(id >= 0 && id <= vocab_size)",
       "model"),
    _m("model-positions-table-short", MOD + "model_config_validate.cc",
       "off-by-one bound",
       "if (c.max_position_embeddings < c.max_sequence_length) {",
       "if (c.max_position_embeddings < c.max_sequence_length - 1) {",
       "model"),

    # --- batching --------------------------------------------------------
    _m("batch-queue-one-too-many", BAT + "batcher.cc", "off-by-one bound",
       "if (num_queued >= options_.max_queue_requests) {",
       "if (num_queued > options_.max_queue_requests) {", "batching"),
    _m("batch-queue-tokens-exactly-full", BAT + "batcher.cc",
       "off-by-one bound",
       "  if (excess > 0) {", "  if (excess >= 0) {", "batching"),
    _m("batch-runner-failure-as-ok", BAT + "batcher.cc", "lost status",
       "if (request != nullptr && !request->completed()) request->Complete(status);",
       "if (request != nullptr && !request->completed())\n"
       "      request->Complete(absl::OkStatus());", "batching"),
    _m("batch-drain-drops-queue", BAT + "batcher.cc", "inverted condition",
       "done = draining_ && queues_.empty();",
       "done = draining_ && !queues_.empty();", "batching"),
    _m("batch-enter-runner-unlocked", BAT + "batcher.cc", "missing lock",
       "void Batcher::EnterRunner() {\n  absl::MutexLock lock(&mu_);\n",
       "void Batcher::EnterRunner() {\n", "batching|tsan"),
    _m("batch-fits-tokens-strict", BAT + "batch_packing.cc",
       "off-by-one bound",
       "batch.num_tokens + request.num_tokens <= policy.max_batch_tokens",
       "batch.num_tokens + request.num_tokens < policy.max_batch_tokens",
       "batching"),
    _m("batch-fits-one-request-more", BAT + "batch_packing.cc",
       "off-by-one bound",
       "static_cast<int64_t>(batch.requests.size()) <\n"
       "             policy.max_batch_requests",
       "static_cast<int64_t>(batch.requests.size()) <=\n"
       "             policy.max_batch_requests", "batching",
       equivalent="Fits() is only called while !Full(), and Full() already "
       "stops a batch at max_batch_requests, so the count check in Fits() "
       "never decides"),
    _m("batch-high-streak-one-more", BAT + "batch_packing.cc",
       "off-by-one bound",
       "return high_led_in_a_row < policy.max_consecutive_high_batches",
       "return high_led_in_a_row <= policy.max_consecutive_high_batches",
       "batching"),
    _m("batch-weights-exactly-fit", BAT + "memory_budget.cc",
       "off-by-one bound",
       "  if (bytes > free_bytes) {", "  if (bytes >= free_bytes) {",
       "batching"),

    # --- service ---------------------------------------------------------
    _m("service-retry-hint-floored", SRV + "status_mapping.cc",
       "off-by-one bound",
       "absl::Ceil(*retry_after, absl::Milliseconds(1))",
       "absl::Floor(*retry_after, absl::Milliseconds(1))", "service",
       exclude=NO_E2E),
    _m("service-error-answered-ok", SRV + "favor_service.cc", "lost status",
       "  if (!status.ok()) call->Answer(status);\n  return call;",
       "  if (!status.ok()) call->Answer(absl::OkStatus());\n  return call;",
       "service", exclude=NO_E2E),
    _m("service-draining-accepted", SRV + "favor_service.cc",
       "inverted condition",
       "if (status.ok() && !call->accepted()) status = ShuttingDownError();",
       "if (status.ok() && call->accepted()) status = ShuttingDownError();",
       "service", exclude=NO_E2E),
    _m("service-attend-default-kernel", SRV + "attend_validation.cc",
       "wrong default",
       'request.kernel().empty() ? absl::string_view("favor+")',
       'request.kernel().empty() ? absl::string_view("softmax")',
       "service", exclude=NO_E2E),
    _m("service-attend-default-features", SRV + "attend_validation.cc",
       "wrong default",
       "constexpr int64_t kDefaultRandomFeatures = 256;",
       "constexpr int64_t kDefaultRandomFeatures = 128;",
       "service", exclude=NO_E2E),
    _m("service-attend-cost-queries-only", SRV + "attend_validation.cc",
       "swapped operand",
       "plan.batch * (plan.query_length + plan.key_length);",
       "plan.batch * (plan.query_length + plan.query_length);",
       "service", exclude=NO_E2E),
    _m("service-attend-mask-by-queries", SRV + "attend_validation.cc",
       "swapped operand",
       "request.key_padding_mask_size() != plan.batch * plan.key_length)",
       "request.key_padding_mask_size() != plan.batch * plan.query_length)",
       "service", exclude=NO_E2E),
    _m("service-no-tokens-open", SRV + "bearer_auth.cc", "inverted condition",
       "  if (tokens.empty()) return absl::OkStatus();",
       "  if (!tokens.empty()) return absl::OkStatus();",
       "service", exclude=NO_E2E),
    _m("service-half-as-bfloat16", SRV + "tensor_codec.cc", "swapped operand",
       "PutLittleEndian(FloatToHalf(values[i]), data);",
       "PutLittleEndian(FloatToBFloat16(values[i]), data);",
       "service", exclude=NO_E2E),

    # --- metrics ---------------------------------------------------------
    _m("metrics-tokens-of-failed-batches", MET + "batcher_metrics.cc",
       "inverted condition",
       "if (status.ok()) metrics_->AddTokens(model_, num_tokens);",
       "if (!status.ok()) metrics_->AddTokens(model_, num_tokens);",
       "metrics"),
    _m("metrics-batch-size-swapped", MET + "batcher_metrics.cc",
       "swapped operand",
       "metrics_->RecordBatch(model_, num_requests, num_tokens);",
       "metrics_->RecordBatch(model_, num_tokens, num_requests);", "metrics"),
    _m("metrics-first-bucket", MET + "buckets.cc", "wrong default",
       "return {0.0001, 0.0002,", "return {0.0002, 0.0005,", "metrics"),
    _m("metrics-token-buckets-short", MET + "buckets.cc", "off-by-one bound",
       "exponent <= max_exponent;", "exponent < max_exponent;", "metrics"),
    _m("metrics-in-flight-never-ends", MET + "prometheus_metrics.cc",
       "swapped operand",
       "void PrometheusMetrics::EndInFlight(int key) { in_flight_[key]->Decrement(); }",
       "void PrometheusMetrics::EndInFlight(int key) { in_flight_[key]->Increment(); }",
       "metrics"),

    # --- client ----------------------------------------------------------
    _m("client-one-attempt-more", CLI + "retry.cc", "off-by-one bound",
       "attempts_made >= options.max_attempts", "attempts_made > options.max_attempts",
       "client", exclude=NO_E2E),
    _m("client-hint-as-ceiling", CLI + "retry.cc", "swapped operand",
       "delay = std::max(delay, *hint);", "delay = std::min(delay, *hint);",
       "client", exclude=NO_E2E),
    _m("client-retries-never-fits", CLI + "retry.cc", "inverted condition",
       "!IsMessageSizeError(status) && !IsNeverFitsError(status);",
       "!IsMessageSizeError(status) && IsNeverFitsError(status);",
       "client", exclude=NO_E2E),
    _m("client-utf8-inverted", CLI + "utf8.cc", "inverted condition",
       "if (static_cast<size_t>(valid) == text.size()) return absl::OkStatus();",
       "if (static_cast<size_t>(valid) != text.size()) return absl::OkStatus();",
       "client", exclude=NO_E2E),

    # --- tokenizer -------------------------------------------------------
    _m("tok-wordpiece-limit-strict", TOK + "wordpiece.cc", "off-by-one bound",
       "if (chars <= limit && SplitWord(word, tokens)) return;",
       "if (chars < limit && SplitWord(word, tokens)) return;", "tokenizer",
       exclude=NO_E2E),
    _m("tok-wordpiece-prefix-inverted", TOK + "wordpiece.cc",
       "inverted condition",
       "const bool whole = start == 0 ||", "const bool whole = start != 0 ||",
       "tokenizer", exclude=NO_E2E),
    _m("tok-strip-accents-default", TOK + "bert_normalizer.cc",
       "wrong default",
       "strip_accents_(options.strip_accents.value_or(options.lowercase))",
       "strip_accents_(options.strip_accents.value_or(false))", "tokenizer",
       exclude=NO_E2E),
    _m("tok-special-tokens-unmarked", TOK + "template_processing.cc",
       "inverted condition",
       "out.Append(item.id, item.token, TokenSpan{}, /*special=*/true);",
       "out.Append(item.id, item.token, TokenSpan{}, /*special=*/false);",
       "tokenizer", exclude=NO_E2E),
    _m("tok-special-tokens-when-not-asked", TOK + "pipeline_tokenizer.cc",
       "inverted condition",
       "options.add_special_tokens ? stages_.post_processor.get() : nullptr;",
       "options.add_special_tokens ? nullptr : stages_.post_processor.get();",
       "tokenizer", exclude=NO_E2E),

    # --- HTTP front ------------------------------------------------------
    _m("http-deadline-as-408", HTTP + "api_errors.cc", "lost status",
       "      return Status::gateway_timeout;",
       "      return Status::request_timeout;", "http", exclude=NO_E2E),
    _m("http-unavailable-as-500", HTTP + "api_errors.cc", "lost status",
       "      return Status::service_unavailable;",
       "      return Status::internal_server_error;", "http", exclude=NO_E2E),
    _m("http-param-inverted", HTTP + "api_errors.cc", "inverted condition",
       "  if (param.empty()) {\n    error->mutable_param()->set_null_value({});",
       "  if (!param.empty()) {\n    error->mutable_param()->set_null_value({});",
       "http", exclude=NO_E2E),
    _m("http-base64-big-endian", HTTP + "openai_embeddings.cc",
       "swapped operand",
       "static_cast<char>(bits >> (8 * b));",
       "static_cast<char>(bits >> (8 * (3 - b)));", "http", exclude=NO_E2E),
]
