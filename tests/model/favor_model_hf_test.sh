#!/usr/bin/env bash
# favor-model inspect and verify on a Hugging Face folder (from the
# hf_parity fixture) with and without a favor.json overlay: they name the
# format, the architecture and the overlay's fields, check the weights in
# their real names, and run the model as the overlay says.
# Usage: favor_model_hf_test.sh FAVOR_MODEL_BINARY HF_FOLDER
set -euo pipefail

cli=$1
source_folder=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cp -r "$source_folder" "$tmp/model"
"$cli" inspect "$tmp/model" >"$tmp/inspect"
grep -q '^format: Hugging Face folder, architecture XLMRobertaModel$' \
  "$tmp/inspect" || fail "inspect names no architecture: $(head -3 "$tmp/inspect")"
grep -q '^overlay (favor.json): none$' "$tmp/inspect" || fail "inspect shows an overlay without favor.json"
grep -q '"kernel": "softmax"' "$tmp/inspect" || fail "not exact attention as trained"
grep -q 'weights: every tensor matches the config' "$tmp/inspect" \
  || fail "inspect did not check the weights"
"$cli" verify "$tmp/model" | grep -q 'softmax' || fail "verify did not run softmax"

printf '%s\n' '{"attention": {"kernel": "favor+", "num_random_features": 32},' \
  ' "max_sequence_length": 20}' >"$tmp/model/favor.json"
"$cli" inspect "$tmp/model" >"$tmp/inspect"
grep -q '^overlay (favor.json): attention.kernel, attention.num_random_features, max_sequence_length$' \
  "$tmp/inspect" || fail "inspect lists no overlay fields: $(head -3 "$tmp/inspect")"
grep -q '"max_sequence_length": 20' "$tmp/inspect" || fail "overlay not applied"
"$cli" verify "$tmp/model" | grep -q 'favor+' || fail "verify did not run favor+"

printf '%s\n' '{"num_hidden_layers": 1}' >"$tmp/model/favor.json"
status=0
"$cli" inspect "$tmp/model" >/dev/null 2>"$tmp/err" || status=$?
[[ $status -eq 1 ]] || fail "an overlay changing the trained model exited $status"
grep -q 'favor.json' "$tmp/err" || fail "the error names no file: $(cat "$tmp/err")"
echo "favor_model_hf_test: ok"
