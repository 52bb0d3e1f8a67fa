// Runs the APK's page, exactly as packaged (its assets/www folder extracted), in headless Chromium at a phone's
// viewport, under the app's origin: every request the page makes goes to the app's own AssetRoutes (Java, behind
// AssetServer on loopback), so the page gets what the WebView would give it. Writes what it showed and computed to
// a JSON file, for tests/test_android_apk.py to compare with the Python runtime.
//
//   node android_demo/webview/tools/apk_page_check.mjs SPEC.json OUT.json
//
// SPEC: {chromium, user_data_dir, origin, server (AssetServer's http://127.0.0.1:PORT), screenshot,
//        query (what PageQuery gives for the pins the APK's manifest records), wrong_pin_query,
//        texts: {ner: [...], classification: [...]}}
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// playwright-core is the web demo's dev dependency (web_demo/node_modules)
const require = createRequire(new URL('../../../web_demo/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const out = { console: {}, requests: [], responses: {} };
// a mid-range phone's screen and an Android System WebView's user agent
const browser = await chromium.launchPersistentContext(spec.user_data_dir, {
  executablePath: spec.chromium, headless: true, viewport: { width: 412, height: 915 }, deviceScaleFactor: 2.625,
  isMobile: true, hasTouch: true,
  userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 7; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 '
    + 'Chrome/156.0.0.0 Mobile Safari/537.36',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
// every http(s) request, the page's and its worker's, answered by AssetRoutes as shouldInterceptRequest would
await browser.route('**/*', async (route) => {
  const request = route.request();
  out.requests.push(request.url());
  const response = await route.fetch({ url: `${spec.server}/`, method: request.method(),
    headers: { ...request.headers(), 'x-pocketbert-url': request.url() } });
  const path = request.url().replace(/[?#].*$/, '');
  out.responses[path] = { status: response.status(), headers: response.headers() };
  await route.fulfill({ response });
});

async function openPage(label, url, shell = false) {
  const page = await browser.newPage();
  const seen = out.console[label] = { errors: [], other: [] };
  page.on('pageerror', (e) => seen.errors.push(`uncaught: ${e.message}`));
  page.on('console', (m) => {
    const line = `${m.worker() ? 'worker: ' : ''}${m.text()}`;
    if (m.type() === 'error') seen.errors.push(line); else seen.other.push(`${m.type()}: ${line}`);
  });
  if (shell) { // the app's JavascriptInterface, as the activity adds it: it receives the Measure record
    await page.addInitScript(() => { window.PocketBertShell = { measured: (json) => { window.shellGot = json; } }; });
  }
  await page.goto(url);
  await page.waitForFunction(() => window.demo?.ready);
  return page;
}

async function results(page, task, texts) {
  return page.evaluate(async ({ task, texts }) => {
    const p = window.demo.pipelines[task] ?? await window.demo.load(`bundles/${task}/`, task);
    const rows = [];
    for (const text of texts) {
      const r = await p.run(text);
      rows.push(task === 'ner' ? { rows: r.rows.map((row) => row.input_ids), entities: r.entities }
        : { input_ids: r.rows[0].input_ids, logits: r.logits[0], labels: r.labels });
    }
    return { artifact: p.bundle.artifact.recipe, file: p.bundle.artifact.file, runtime: p.info.runtime,
      buckets: p.model.buckets, rows };
  }, { task, texts });
}

try {
  const page = await openPage('main', `${spec.origin}/index.html${spec.query}`);
  out.seed = await page.evaluate(async () => {
    const result = await window.demo.ready;
    const box = (id) => document.getElementById(id).getBoundingClientRect();
    return { entities: result?.entities ?? null, error: window.demo.lastError,
      text: document.getElementById('text').value,
      marks: [...document.querySelectorAll('#highlighted mark')].map((m) => m.firstChild.textContent),
      bundle: document.getElementById('bundle').textContent,
      drop_shown: getComputedStyle(document.getElementById('drop')).display !== 'none',
      secure: window.isSecureContext, isolated: window.crossOriginIsolated, origin: location.origin,
      page_width: document.documentElement.scrollWidth, viewport_width: window.innerWidth,
      text_box_width: box('text').width };
  });
  await page.screenshot({ path: spec.screenshot });
  out.ner = await results(page, 'ner', spec.texts.ner);
  out.classification = await results(page, 'classification', spec.texts.classification);
  out.classification_shown = await page.evaluate(async () => {
    window.demo.setTask('classification');
    await window.demo.run();
    return { bundle: document.getElementById('bundle').textContent,
      labels: [...document.querySelectorAll('#labels td:first-child')].map((td) => td.textContent) };
  });
  await page.screenshot({ path: spec.screenshot.replace(/\.png$/, '-classification.png') });
  // what a page script can and cannot reach from the app's origin
  out.reach = await page.evaluate(async () => {
    const status = async (url) => { try { return (await fetch(url)).status; } catch (e) { return `refused: ${e.message}`; } };
    return { other_origin: await status('https://example.com/model.tflite'),
      unknown_kind: await status('/bundles/ner/model.bin'), missing: await status('/bundles/none/manifest.json') };
  });

  // Measure started as the app's intent extras start it, its record handed to the app's shell
  const measured = await openPage('measure', `${spec.origin}/index.html${spec.query}&task=classification&measure=1&warmup=1&runs=2`, true);
  await measured.waitForFunction(() => window.shellGot !== undefined, null, { timeout: 180000 });
  out.measure = { shell: await measured.evaluate(() => window.shellGot),
    status: await measured.textContent('#status') };
  // a bundle whose manifest is not the one the build pinned is refused, visibly
  const wrong = await openPage('wrong_pin', `${spec.origin}/index.html${spec.wrong_pin_query}`);
  await wrong.evaluate(() => window.demo.ready);
  out.wrong_pin = { error: await wrong.evaluate(() => (document.getElementById('error').hidden ? null
    : document.getElementById('error').textContent)), highlighted: await wrong.textContent('#highlighted') };
} finally {
  await browser.close();
}
writeFileSync(outPath, JSON.stringify(out));
