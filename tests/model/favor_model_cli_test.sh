#!/usr/bin/env bash
# favor-model init / inspect / verify / compare on a fresh model, on the default model
# (when the build generated it) and on corrupt models, which must fail with
# exit status 1 and one clear line on stderr.
# Usage: favor_model_cli_test.sh FAVOR_MODEL_BINARY DEFAULT_MODEL_DIR
set -euo pipefail

cli=$1
default_model=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error NEEDLE COMMAND...: exit status 1, one stderr line naming NEEDLE.
expect_error() {
  local needle=$1
  shift
  local status=0
  "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  [[ $status -eq 1 ]] || fail "$* exited $status, want 1"
  [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "$* printed $(cat "$tmp/err")"
  grep -qF -- "$needle" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$needle'"
}

# A small model of every block type: init, inspect, verify.
"$cli" init --output "$tmp/small" --layers 2 --hidden 32 --heads 2 --ffn 64 \
  --vocab 100 --features 16 --seed 5 >/dev/null
"$cli" inspect "$tmp/small" >"$tmp/inspect"
grep -q '"hidden_size": 32' "$tmp/inspect" || fail "inspect shows no config"
grep -q 'encoder.layer.1.output.dense.weight .*F32 *\[32, 64\]' "$tmp/inspect" \
  || fail "inspect lists no tensors"
grep -q 'weights: every tensor matches the config' "$tmp/inspect" \
  || fail "inspect did not check the weights"
"$cli" verify "$tmp/small" >"$tmp/verify"
grep -q 'checksum' "$tmp/verify" || fail "verify printed no checksum"
"$cli" init --output "$tmp/cross" --layers 2 --hidden 32 --heads 2 --ffn 64 \
  --vocab 100 --features 16 --block cross_attention --num_latents 4 \
  --position none --kernel softmax >/dev/null
"$cli" verify "$tmp/cross" | grep -q 'output 2 x 32' || fail "cross verify"
"$cli" init --output "$tmp/isab" --layers 1 --hidden 32 --heads 2 --ffn 64 \
  --vocab 100 --block isab --num_inducing_points 3 --position absolute \
  --max_sequence_length 64 --norm scale_norm --norm_placement pre >/dev/null
"$cli" verify "$tmp/isab" | grep -q 'output 2 x 32' || fail "isab verify"

# Deterministic: the same seed writes the same bytes.
"$cli" init --output "$tmp/again" --layers 2 --hidden 32 --heads 2 --ffn 64 \
  --vocab 100 --features 16 --seed 5 >/dev/null
cmp -s "$tmp/small/model.safetensors" "$tmp/again/model.safetensors" \
  || fail "init is not deterministic"
expect_error "already holds a model" "$cli" init --output "$tmp/small"
expect_error "num_attention_heads" "$cli" init --output "$tmp/bad" --heads 3

# FAVOR++ with simplex projections, written into the config and served.
"$cli" init --output "$tmp/simplex" --layers 1 --hidden 32 --heads 2 --ffn 64 \
  --vocab 100 --features 16 --kernel favor++ --random_features simplex >/dev/null
grep -q '"kernel": "favor++"' "$tmp/simplex/config.json" || fail "no favor++"
grep -q '"simplex": true' "$tmp/simplex/config.json" || fail "no simplex"
"$cli" verify "$tmp/simplex" | grep -q 'checksum' || fail "simplex verify"
expect_error "--random_features" "$cli" init --output "$tmp/bad" \
  --random_features gaussian

# A tokenizer copied in by init, and one the model cannot use.
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n' >"$tmp/vocab.txt"
"$cli" init --output "$tmp/text" --layers 1 --hidden 32 --heads 2 --ffn 64 \
  --vocab 100 --tokenizer "$tmp/vocab.txt" >/dev/null
cmp -s "$tmp/vocab.txt" "$tmp/text/vocab.txt" || fail "init copied no tokenizer"
"$cli" inspect "$tmp/text" | grep -q 'tokenizer: vocab.txt, wordpiece, 5 ids' \
  || fail "inspect shows no tokenizer"
"$cli" inspect "$tmp/small" | grep -q 'tokenizer: none' \
  || fail "inspect invents a tokenizer"
# tokenize: one JSON string a line in, the ids the server would feed the
# model out ([CLS] text [SEP]; "hello" is id 4, an unknown word [UNK] = 1).
printf '"hello"\n"Hello, xyz hello"\n' | "$cli" tokenize "$tmp/text" >"$tmp/ids"
printf '2 4 3\n2 4 1 1 4 3\n' | cmp -s - "$tmp/ids" \
  || fail "tokenize: $(cat "$tmp/ids")"
printf '"hello"\n""\n' | expect_error "stdin line 2: text is empty" \
  "$cli" tokenize "$tmp/text"
echo 'hello' | expect_error "stdin line 1: not a JSON string" \
  "$cli" tokenize "$tmp/text"
expect_error "has no tokenizer" "$cli" tokenize "$tmp/small" </dev/null
expect_error "more than the model's vocab_size (4)" "$cli" init \
  --output "$tmp/narrow" --layers 1 --hidden 32 --heads 2 --ffn 64 --vocab 4 \
  --tokenizer "$tmp/vocab.txt"
# It names the file given, not the staged copy init removed.
grep -qF -- "--tokenizer $tmp/vocab.txt: the tokenizer has" "$tmp/err" \
  || fail "init names $(cat "$tmp/err")"
expect_error "--tokenizer $tmp/none.txt" "$cli" init --output "$tmp/none" \
  --layers 1 --hidden 32 --heads 2 --ffn 64 --tokenizer "$tmp/none.txt"
# A failed init leaves nothing: no half model for a polling server to load,
# no staging folder; over a model (--force), the old one stays whole.
[[ ! -e "$tmp/narrow" && ! -e "$tmp/none" ]] || fail "a failed init left a model"
cp "$tmp/small/model.safetensors" "$tmp/small.before"
expect_error "more than the model's vocab_size (4)" "$cli" init --force \
  --output "$tmp/small" --layers 1 --hidden 32 --heads 2 --ffn 64 --vocab 4 \
  --tokenizer "$tmp/vocab.txt"
cmp -s "$tmp/small/model.safetensors" "$tmp/small.before" \
  || fail "a failed init --force changed the model"
[[ ! -e "$tmp/small/vocab.txt" ]] || fail "a failed init --force copied in"
leftovers=$(find "$tmp" -maxdepth 1 -name '.*.init-*')
[[ -z $leftovers ]] || fail "init left $leftovers"
# The folder it made has mkdir's permissions, not mkdtemp's 0700.
mkdir "$tmp/by_mkdir"
[[ $(stat -c %a "$tmp/text") == $(stat -c %a "$tmp/by_mkdir") ]] \
  || fail "init made $tmp/text $(stat -c %a "$tmp/text")"
# init --force over a model replaces it (here: another seed, a tokenizer).
"$cli" init --force --output "$tmp/again" --layers 2 --hidden 32 --heads 2 \
  --ffn 64 --vocab 100 --features 16 --seed 6 --tokenizer "$tmp/vocab.txt" \
  >/dev/null
! cmp -s "$tmp/small/model.safetensors" "$tmp/again/model.safetensors" \
  || fail "init --force kept the old weights"
[[ -f "$tmp/again/vocab.txt" ]] || fail "init --force copied no tokenizer"

# The default model, when the build made it: BERT-base-uncased's vocabulary
# with its licence beside it.
if [[ -f "$default_model/model.safetensors" ]]; then
  "$cli" inspect "$default_model" | grep -q 'every tensor matches' \
    || fail "default model inspect"
  "$cli" inspect "$default_model" \
    | grep -q 'tokenizer: tokenizer.json, wordpiece, 30522 ids' \
    || fail "default model tokenizer"
  grep -q 'Apache License' "$default_model/tokenizer.json.license" \
    || fail "default model tokenizer licence"
  "$cli" verify "$default_model" --tokens 64 | grep -q 'output 2 x 256' \
    || fail "default model verify"
fi

# A tensor name with a control sequence and a line break of its own is
# printed escaped: a file cannot write to the terminal through inspect.
mkdir "$tmp/names"
cp "$tmp/small/config.json" "$tmp/names/"
/usr/bin/python3 - "$tmp/names/model.safetensors" <<'PY'
import json, struct, sys
header = json.dumps({"a\x1b[31mred\nweights: fake": {
    "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + b"\0\0\0\0")
PY
"$cli" inspect "$tmp/names" >"$tmp/out" 2>/dev/null || true
grep -qF '"a\x1b[31mred\nweights: fake"' "$tmp/out" \
  || fail "inspect printed the name as $(cat -A "$tmp/out" | grep red)"
! grep -q $'\x1b' "$tmp/out" || fail "inspect printed an escape character"

# Corrupt models: truncated weights, a header that lies, a config typo, a
# missing folder.
mkdir "$tmp/truncated" "$tmp/lying" "$tmp/typo"
cp "$tmp/small/config.json" "$tmp/truncated/"
head -c 5000 "$tmp/small/model.safetensors" >"$tmp/truncated/model.safetensors"
cp "$tmp/small/config.json" "$tmp/lying/"
printf '\xff\xff\xff\xff\xff\xff\xff\x7f{}' >"$tmp/lying/model.safetensors"
echo '{"hidden_sise": 32}' >"$tmp/typo/config.json"
for command in inspect verify; do
  expect_error "truncated" "$cli" "$command" "$tmp/truncated"
  expect_error "header length" "$cli" "$command" "$tmp/lying"
  expect_error "unknown field 'hidden_sise'" "$cli" "$command" "$tmp/typo"
  expect_error "config.json" "$cli" "$command" "$tmp/nowhere"
done
expect_error "device 'cuda:7' is not available" \
  "$cli" verify "$tmp/small" --device cuda:7
expect_error "dtype float16 needs a CUDA device" \
  "$cli" verify "$tmp/small" --dtype float16

# bfloat16 on the CPU: verify reports the dtype, compare prints the cosines
# (on the model and a peaked copy); refused, naming the instructions, on a
# CPU without AVX512-BF16 or AMX-BF16 (or with FAVOR_CPU_ISA capping them).
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo &&
   [[ "${FAVOR_CPU_ISA:-native}" == native ]]; then
  "$cli" verify "$tmp/small" --dtype bfloat16 | grep -q 'bfloat16 on cpu' \
    || fail "verify does not report bfloat16"
  "$cli" compare "$tmp/small" --inputs 4 --max_tokens 64 >"$tmp/compare"
  [[ $(grep -c 'cosine of the pooled embeddings: mean 0.99' "$tmp/compare") -eq 2 ]] \
    || fail "compare printed $(cat "$tmp/compare")"
  grep -q 'peaked copy (largest |logit| per layer: ' "$tmp/compare" \
    || fail "compare made no peaked copy"
  grep -q "^model $tmp/small (largest |logit| per layer: " "$tmp/compare" \
    || fail "compare printed no logits of the model itself"
else
  expect_error "AVX512-BF16" "$cli" verify "$tmp/small" --dtype bfloat16
fi

# Usage errors exit 2.
status=0
"$cli" frobnicate >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "unknown command exited $status, want 2"
echo "favor-model CLI: all checks passed"
