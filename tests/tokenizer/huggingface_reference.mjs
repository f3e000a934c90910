// Writes Hugging Face's own encodings of a corpus, for the parity tests
// (wordpiece_parity_test, tokenizer_json_parity_test).
//
// Usage: node huggingface_reference.mjs <npm prefix> <tokenizer.json> <corpus> <output.jsonl>
//
// Two Hugging Face implementations, both run on the same tokenizer.json:
//  - @huggingface/tokenizers, the pure-JavaScript tokenizers (transformers.js):
//    its encode() returns ids and tokens, no offsets;
//  - tokenizers, Hugging Face's Node binding of the Rust crate (the library
//    that writes tokenizer.json and that transformers' fast tokenizers run):
//    ids, tokens and offsets. Its offsets count Unicode code points (checked:
//    "😀👍🏽 ok" gives [0,3] [4,6]); they are converted here to UTF-8 bytes.
// One output line per corpus string: {"js_ids", "ids", "tokens", "offsets"}.
import { readFileSync, writeFileSync } from 'fs';
import { createRequire } from 'module';
import path from 'path';
import { pathToFileURL } from 'url';

const [prefix, tokenizerPath, corpusPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error('usage: huggingface_reference.mjs <npm prefix> <tokenizer.json> <corpus> <output>');
  process.exit(2);
}
const modules = path.resolve(prefix, 'node_modules');
const js = await import(pathToFileURL(
    path.join(modules, '@huggingface/tokenizers/dist/tokenizers.mjs')).href);
const rust = createRequire(path.join(modules, 'x.js'))('tokenizers');

const tokenizerJson = readFileSync(tokenizerPath, 'utf8');
const jsTokenizer = new js.Tokenizer(JSON.parse(tokenizerJson), {});
const rustTokenizer = rust.Tokenizer.fromString(tokenizerJson);

// Byte offset of each code point index of `text` (and of its end).
function byteOffsets(text) {
  const offsets = [0];
  for (const ch of text) {
    offsets.push(offsets[offsets.length - 1] + Buffer.byteLength(ch, 'utf8'));
  }
  return offsets;
}

const strings = readFileSync(corpusPath, 'utf8').split('\n')
    .filter((line) => line.length > 0 && !line.startsWith('#'))
    .map((line) => JSON.parse(line));
const out = [];
for (const text of strings) {
  const encoding = await rustTokenizer.encode(text);
  const bytes = byteOffsets(text);
  out.push(JSON.stringify({
    js_ids: jsTokenizer.encode(text).ids,
    ids: encoding.getIds(),
    tokens: encoding.getTokens(),
    offsets: encoding.getOffsets().map(([b, e]) => [bytes[b], bytes[e]]),
  }));
}
writeFileSync(outputPath, out.join('\n') + '\n');
console.log(`huggingface_reference: ${strings.length} strings from ${corpusPath}`);
