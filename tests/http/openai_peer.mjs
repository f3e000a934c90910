// The official OpenAI client (npm `openai`) against favor-server's
// /v1/embeddings, as an application would call it. Prints one JSON object:
// every case's request and the embeddings the client returned (already
// decoded from base64 where the client asked for it, which it does by
// itself when the caller names no encoding_format), plus the model list and
// the status of a call for an unknown model; one model retrieved, and the
// status of retrieving an unknown one. Favor's extension fields (`inputs`,
// `embeddings`) are passed on as the server sent them.
// Usage: node openai_peer.mjs <node_modules dir> <base URL> [api key]
import { createRequire } from 'module';
import path from 'path';
import { pathToFileURL } from 'url';

const [modules, baseURL, apiKey] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'noop.js'));
const openaiPath = require.resolve('openai');
const { default: OpenAI } = await import(pathToFileURL(openaiPath).href);

const client = new OpenAI({ baseURL, apiKey: apiKey || 'unused', maxRetries: 0 });

const cases = [
  { name: 'string', input: 'The quick brown fox jumps over the lazy dog.' },
  { name: 'strings', input: ['first text', 'a second, somewhat longer text'] },
  { name: 'token_ids', input: [101, 7592, 2088, 102] },
  { name: 'token_id_arrays', input: [[101, 7592, 102], [101, 2088, 1010, 102]] },
  { name: 'float', input: 'hello world', encoding_format: 'float' },
  { name: 'base64', input: ['hello', 'world'], encoding_format: 'base64' },
  { name: 'dimensions', input: ['hello', 'world'], dimensions: 64 },
  // Favor's extensions (docs/http.md), which the client passes through.
  { name: 'embedding_types', input: ['hello', 'a second text'], encoding_format: 'float',
    embedding_types: ['float', 'int8', 'uint8', 'binary', 'ubinary'] },
  { name: 'embedding_types_base64', input: ['hello'], encoding_format: 'base64',
    embedding_types: ['ubinary', 'int8'] },
  { name: 'truncate', input: ['hello', 'world'], truncate: true, truncation_direction: 'Left' },
  { name: 'late_chunking', late_chunking: true,
    input: ['Late chunking embeds a document once.', 'Each chunk is pooled', 'from its own tokens.'] },
];

const results = [];
for (const c of cases) {
  const { name, ...request } = c;
  const response = await client.embeddings.create({ model: 'default', ...request });
  results.push({
    name,
    request,
    object: response.object,
    model: response.model,
    usage: response.usage,
    inputs: response.inputs,
    data: response.data.map((d) => ({
      object: d.object,
      index: d.index,
      embeddings: d.embeddings,
      // The client decodes base64 itself only when it chose base64; asked
      // for explicitly, the string comes back as the server sent it.
      embedding: d.embedding === undefined ? null : typeof d.embedding === 'string'
        ? Array.from(new Float32Array(new Uint8Array(Buffer.from(d.embedding, 'base64')).buffer))
        : Array.from(d.embedding),
    })),
  });
}

const models = await client.models.list();
const retrieved = await client.models.retrieve('default');
let unknownModelStatus = 0;
try {
  await client.embeddings.create({ model: 'no-such-model', input: 'x' });
} catch (error) {
  unknownModelStatus = error.status;
}
let unknownRetrieveStatus = 0;
try {
  await client.models.retrieve('no-such-model');
} catch (error) {
  unknownRetrieveStatus = error.status;
}
console.log(JSON.stringify({
  results,
  models: models.data.map((m) => m.id),
  retrieved: { id: retrieved.id, object: retrieved.object, owned_by: retrieved.owned_by },
  unknownModelStatus,
  unknownRetrieveStatus,
}));
