// Drives the benchmark pages in headless Chromium, one fresh browser context (empty cache) per cell, and writes
// what each page measured: bytes downloaded by kind (from the network log), cold load to first result, the
// answers to the texts, and the timed runs per text length.
//
//   node driver.mjs SPEC.json OUT.json
//
// SPEC: {base (served folder URL), chromium, cells: [{id, runtime, threads, page (spec in the URL hash),
//        texts: [...] (answered for agreement; may be empty), timing: {seq_len: text}, warmup, runs}]}
// OUT:  [{id, bytes: {model, wasm, js, other}, requests, cold_ms, first, info, isolated, answers, times: {seq_len: [ms]},
//         error}]
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const browser = await chromium.launch({
  executablePath: spec.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});

function kind(url) {
  const path = new URL(url).pathname;
  if (path.startsWith('/models/') || path.startsWith('/bundles/')) return 'model';
  if (path.endsWith('.wasm')) return 'wasm';
  if (/\.m?js$/.test(path)) return 'js';
  return 'other';
}

async function runCell(cell) {
  const context = await browser.newContext(); // its own cache: every cell loads cold
  const result = { id: cell.id, bytes: { model: 0, wasm: 0, js: 0, other: 0 }, requests: 0, console: [] };
  context.on('requestfinished', async (request) => {
    const sizes = await request.sizes().catch(() => null);
    if (!sizes) return;
    result.requests += 1;
    result.bytes[kind(request.url())] += sizes.responseBodySize + sizes.responseHeadersSize;
  });
  try {
    const page = await context.newPage();
    page.on('pageerror', (e) => result.console.push(`uncaught: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') result.console.push(m.text()); });
    const hash = encodeURIComponent(JSON.stringify(cell.page));
    await page.goto(`${spec.base}${cell.runtime}.html#${hash}`);
    await page.waitForFunction(() => window.bench?.ready, null, { timeout: 600000 });
    const ready = await page.evaluate(() => window.bench.ready);
    Object.assign(result, ready);
    if (ready.error) return result;
    result.answers = await page.evaluate((texts) => window.bench.answers(texts), cell.texts);
    result.times = {};
    for (const [seq, text] of Object.entries(cell.timing)) {
      result.times[seq] = await page.evaluate(({ text, warmup, runs }) => window.bench.time(text, warmup, runs),
        { text, warmup: cell.warmup, runs: cell.runs });
    }
    result.user_agent = await page.evaluate(() => navigator.userAgent);
    result.hardware_concurrency = await page.evaluate(() => navigator.hardwareConcurrency);
  } catch (err) {
    result.error = String(err?.message ?? err);
  } finally {
    await context.close();
  }
  return result;
}

const out = [];
try {
  for (const cell of spec.cells) {
    out.push(await runCell(cell));
    console.error(`${cell.id}: ${out.at(-1).error ?? 'done'}`);
  }
} finally {
  await browser.close();
}
writeFileSync(outPath, JSON.stringify(out));
