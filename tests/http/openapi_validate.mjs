// favor-server's OpenAPI document (the build's openapi.json) through a real
// validator: npm's @apidevtools/swagger-parser, which checks it against the
// OpenAPI 3.1 schema and resolves every $ref. Prints what it found; exits 1
// with the validator's message when the document is invalid.
// Usage: node openapi_validate.mjs <node_modules dir> <openapi.json>
import { createRequire } from 'module';
import path from 'path';
import { pathToFileURL } from 'url';

const [modules, document] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'noop.js'));
const parserPath = require.resolve('@apidevtools/swagger-parser');
const { default: SwaggerParser } = await import(pathToFileURL(parserPath).href);

try {
  const api = await SwaggerParser.validate(document);
  const operations = Object.values(api.paths)
      .reduce((n, item) => n + Object.keys(item).length, 0);
  console.log(`ok: ${document} is a valid OpenAPI ${api.openapi} document: ` +
              `${Object.keys(api.paths).length} paths, ${operations} ` +
              `operations, ${Object.keys(api.components.schemas).length} schemas`);
} catch (error) {
  console.error(`FAILED: ${document} is not a valid OpenAPI document: ` +
                error.message);
  process.exit(1);
}
