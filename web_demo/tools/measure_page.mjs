// Opens the built page in headless Chromium once per precision, each time with a fresh profile (cold: no
// cache), and records page load to first result and the measure panel's latency per bucket.
//
//   node tools/measure_page.mjs SPEC.json OUT.json
//
// SPEC: {url, chromium, profile_root, precisions: [...], warmup, runs, screenshot: path | null}
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const out = [];
for (const precision of spec.precisions) {
  const browser = await chromium.launchPersistentContext(join(spec.profile_root, precision), {
    executablePath: spec.chromium, headless: true, viewport: { width: 900, height: 640 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${spec.url}?task=ner&precision=${precision}`);
    await page.waitForFunction(() => window.demo?.ready);
    const first = await page.evaluate(async () => {
      const r = await window.demo.ready;
      return { cold_ms: window.demo.coldMs, error: window.demo.lastError, entities: r?.entities ?? null };
    });
    if (first.error) throw new Error(first.error);
    if (spec.screenshot && precision === spec.precisions[0]) await page.screenshot({ path: spec.screenshot, fullPage: true });
    await page.evaluate(() => { document.querySelector('details.measure').open = true; });
    await page.fill('#warmup', String(spec.warmup));
    await page.fill('#runs', String(spec.runs));
    await page.click('#measure');
    await page.waitForFunction(() => window.demo.measured !== null, null, { timeout: 600000 });
    out.push({ precision, ...first, measured: await page.evaluate(() => window.demo.measured) });
  } finally {
    await browser.close();
  }
}
writeFileSync(outPath, JSON.stringify(out, null, 1));
