// A person's use of favor-server's /docs page, in a real browser: Debian's
// chromium, headless, driven by npm's playwright-core. Loads /docs, finds
// POST /v1/embeddings, opens it, presses "Try it out" and "Execute" (which
// sends the document's first example), and reads the answer the page
// shows: its status and body. Saves a screenshot of the page with the
// answer. Prints one JSON object: {status, body, operations, screenshot}.
// Usage: node docs_browser.mjs <node_modules dir> <base URL> <screenshot.png>
import { createRequire } from 'module';
import path from 'path';
import { pathToFileURL } from 'url';

const [modules, base, screenshot] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'noop.js'));
const playwright = await import(
    pathToFileURL(require.resolve('playwright-core')).href);
const chromium = (playwright.chromium ?? playwright.default.chromium);

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const failed = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  page.setDefaultTimeout(30000);
  page.on('pageerror', (error) => failed.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => failed.push(
      `request failed: ${request.url()} ${request.failure()?.errorText}`));
  await page.goto(`${base}/docs`);
  // Swagger UI has read /openapi.json once the operations are drawn.
  const operation = page.locator('.opblock-post', {
    has: page.locator('.opblock-summary-path[data-path="/v1/embeddings"]'),
  });
  await operation.waitFor();
  const operations = await page.locator('.opblock').count();
  await operation.locator('.opblock-summary').click();
  await operation.locator('button.try-out__btn').click();
  await operation.locator('button.execute').click();
  const live = operation.locator('.live-responses-table .response');
  await live.first().waitFor();
  const status = (await live.first().locator('.response-col_status')
      .innerText()).trim();
  const body = await operation
      .locator('.live-responses-table .response-col_description pre')
      .first().innerText();
  await operation.scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshot, fullPage: false });
  console.log(JSON.stringify({ status, body, operations, screenshot, failed }));
} finally {
  await browser.close();
}
