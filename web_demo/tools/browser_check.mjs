// Drives the built page in headless Chromium and writes what it shows and computes to a JSON file, for
// tests/test_web_demo.py to compare with the Python runtime.
//
//   node tools/browser_check.mjs SPEC.json OUT.json
//
// SPEC: {url, chromium, user_data_dir, screenshot, vocab, settings (name -> tokenizer settings),
//        tokenization (cases), ner_golden, classification_golden, texts: {ner: [...], classification: [...]},
//        tampered_url, tampered_files: [paths]}
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const out = { console_errors: [] };
const browser = await chromium.launchPersistentContext(spec.user_data_dir, {
  executablePath: spec.chromium, headless: true, viewport: { width: 900, height: 640 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => out.console_errors.push(e.message));
  await page.goto(spec.url);
  await page.waitForFunction(() => window.demo?.ready);
  out.seed = await page.evaluate(async () => {
    const result = await window.demo.ready;
    return { entities: result?.entities ?? null, error: window.demo.lastError, cold_ms: window.demo.coldMs,
      text: document.getElementById('text').value, shown: document.getElementById('highlighted').textContent,
      marks: [...document.querySelectorAll('#highlighted mark')].map((m) => m.firstChild.textContent) };
  });
  await page.screenshot({ path: spec.screenshot, fullPage: true });

  out.tokenization = await page.evaluate(async ({ vocab, settings, cases }) => {
    const { WordPieceTokenizer, tables } = window.demo.modules;
    const t = await tables();
    const tokenizers = Object.fromEntries(Object.entries(settings).map(([n, s]) => [n, new WordPieceTokenizer(vocab, s, t)]));
    return cases.map((c) => (c.stride === null ? [tokenizers[c.tokenizer].encode(c.text, c.max_length)]
      : tokenizers[c.tokenizer].windows(c.text, c.max_length, c.stride)));
  }, { vocab: spec.vocab, settings: spec.settings, cases: spec.tokenization });

  out.ner_golden = await page.evaluate(({ records, settings }) => {
    const { decodeText } = window.demo.modules;
    return records.map((r) => {
      const how = { labels: r.labels, unkId: settings[r.tokenizer].special_tokens.unk.id, wordAware: true,
        detokenize: (tokens) => window.demo.pipelines.ner.tokenizer.detokenize(tokens) };
      const step = r.stride === null ? 0 : r.max_length - 2 - r.stride;
      const cps = [...r.text].map((c) => c.codePointAt(0));
      return Object.fromEntries(Object.keys(r.expected).map((aggregation) => [aggregation,
        decodeText(cps, r.windows, r.windows.map((w) => w.logits), aggregation, how, ['O'], step)]));
    });
  }, { records: spec.ner_golden, settings: spec.settings });

  out.classification_golden = await page.evaluate((records) => {
    const { ranked, scoreFunction, scores } = window.demo.modules;
    return records.map((r) => ranked(Array.from(scores(r.logits, scoreFunction(r.problem_type, r.labels.length))), r.labels));
  }, spec.classification_golden);

  out.texts = {};
  for (const task of ['ner', 'classification']) {
    out.texts[task] = await page.evaluate(async ({ task, texts }) => {
      const p = window.demo.pipelines[task] ?? await window.demo.load(`bundles/${task}/`, task);
      const results = [];
      for (const text of texts) {
        const r = await p.run(text);
        results.push({ rows: r.rows.map((row) => ({ input_ids: row.input_ids, offsets: row.offsets })),
          entities: r.entities ?? null, labels: r.labels ?? null, buckets: r.rows.map((row) => p.model.bucketFor(row.input_ids.length)) });
      }
      return { results, artifact: p.bundle.artifact.recipe };
    }, { task, texts: spec.texts[task] });
  }

  await page.evaluate(() => { document.querySelector('details.measure').open = true; });
  await page.fill('#warmup', '1');
  await page.fill('#runs', '3');
  await page.click('#measure');
  await page.waitForFunction(() => window.demo.measured !== null, null, { timeout: 120000 });
  out.measured = await page.evaluate(() => window.demo.measured);

  const tampered = await browser.newPage();
  await tampered.goto(spec.tampered_url);
  await tampered.waitForFunction(() => window.demo?.ready);
  await tampered.evaluate(() => window.demo.ready);
  out.tampered_folder = { error: await tampered.locator('#error').isVisible() ? await tampered.textContent('#error') : null,
    highlighted: await tampered.textContent('#highlighted') };
  await tampered.evaluate(() => { document.getElementById('error').hidden = true; window.demo.lastError = null; });
  await tampered.setInputFiles('#pick', spec.tampered_files);
  await tampered.waitForFunction(() => window.demo.lastError !== null, null, { timeout: 60000 });
  out.tampered_files = { error: await tampered.locator('#error').isVisible() ? await tampered.textContent('#error') : null };
} finally {
  await browser.close();
}
writeFileSync(outPath, JSON.stringify(out));
