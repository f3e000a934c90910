// Runs an encoder exported by export.py with ONNX Runtime for Node
// (onnxruntime-node, installed by setup.sh), on the CPU with the settings a
// CPU embedding service would use: 2 intra-op threads, 1 inter-op thread,
// every graph optimisation.
//
// Timing: random token ids of one shape; `warmup` passes, then `runs`
// timed passes; prints one JSON line
//   {"batch", "length", "runs", "seconds": [...],
//    "tokens_per_s": {"best", "mean"}}
// where mean is all tokens over all timed seconds (as model_bench's rate).
//
//   node run_ort.mjs --peers build/peers --model build/peers/favor.onnx \
//       --batch 1 --length 512 [--warmup 2 --runs 10 --threads 2]
//
// Evaluation (for the checks): reads {"shape": [b, l], "ids": [...]} from a
// file or stdin ("-"), prints {"shape": [b, hidden], "values": [...]}.
//
//   node run_ort.mjs --peers build/peers --model M.onnx --eval -
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

const { values: flags } = parseArgs({
  options: {
    peers: { type: 'string', default: 'build/peers' },
    model: { type: 'string' },
    eval: { type: 'string' },
    batch: { type: 'string', default: '1' },
    length: { type: 'string', default: '512' },
    warmup: { type: 'string', default: '2' },
    runs: { type: 'string', default: '10' },
    threads: { type: 'string', default: '2' },
    vocab: { type: 'string', default: '30522' },
  },
});

// The package lives under --peers, not beside this file; ES modules ignore
// NODE_PATH, so resolve it from there.
const require = createRequire(join(resolve(flags.peers), 'node_modules', '/'));
const ort = require('onnxruntime-node');

const session = await ort.InferenceSession.create(flags.model, {
  intraOpNumThreads: Number(flags.threads),
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionProviders: ['cpu'],
});

function idsTensor(shape, ids) {
  return new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), shape);
}

async function embed(tensor) {
  const out = await session.run({ ids: tensor });
  return out.embedding;
}

// Deterministic ids in [0, vocab): the work does not depend on them.
function randomIds(count, vocab) {
  const ids = new Array(count);
  let state = 12345;
  for (let i = 0; i < count; ++i) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    ids[i] = state % vocab;
  }
  return ids;
}

async function evaluate() {
  const text = readFileSync(flags.eval === '-' ? 0 : flags.eval, 'utf8');
  const request = JSON.parse(text);
  const out = await embed(idsTensor(request.shape, request.ids));
  console.log(JSON.stringify({ shape: out.dims, values: Array.from(out.data) }));
}

async function time() {
  const batch = Number(flags.batch), length = Number(flags.length);
  const tensor = idsTensor([batch, length],
                           randomIds(batch * length, Number(flags.vocab)));
  for (let i = 0; i < Number(flags.warmup); ++i) await embed(tensor);
  const seconds = [];
  for (let i = 0; i < Number(flags.runs); ++i) {
    const start = performance.now();
    await embed(tensor);
    seconds.push((performance.now() - start) / 1000);
  }
  const tokens = batch * length;
  const total = seconds.reduce((a, b) => a + b, 0);
  console.log(JSON.stringify({
    batch, length, runs: seconds.length, seconds,
    tokens_per_s: { best: tokens / Math.min(...seconds),
                    mean: tokens * seconds.length / total },
  }));
}

await (flags.eval !== undefined ? evaluate() : time());
