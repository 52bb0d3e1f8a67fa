// Drives the built page in headless Chromium and writes what it shows and computes to a JSON file, for
// tests/test_web_demo.py to compare with the Python runtime.
//
//   node tools/browser_check.mjs SPEC.json OUT.json
//
// SPEC: {url, chromium, user_data_dir, screenshot, vocab, settings (name -> tokenizer settings),
//        tokenization (cases), ner_golden, classification_golden, texts: {ner: [...], classification: [...]},
//        tampered_url, tampered_files: [paths], missing_url, file_url,
//        int4_url (a classification bundle whose default is tflite:int4-dynamic), int4_texts,
//        int4_ner_url (a NER bundle whose default is tflite:int4-dynamic), int4_ner_texts}
// OUT.console: per page, its uncaught errors and console errors (its worker's too) and the other console lines.
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const out = { console: {} };
const browser = await chromium.launchPersistentContext(spec.user_data_dir, {
  executablePath: spec.chromium, headless: true, viewport: { width: 900, height: 640 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});

async function openPage(label, url) {
  const page = await browser.newPage();
  const seen = out.console[label] = { errors: [], other: [] };
  page.on('pageerror', (e) => seen.errors.push(`uncaught: ${e.message}`));
  page.on('console', (m) => {
    const line = `${m.worker() ? 'worker: ' : ''}${m.text()}`;
    if (m.type() === 'error') seen.errors.push(line); else seen.other.push(`${m.type()}: ${line}`);
  });
  await page.goto(url);
  return page;
}

const errorShown = async (page) => (await page.locator('#error').isVisible() ? page.textContent('#error') : null);

// A bundle opened at the precision the page picks by default, and what it gives for each text.
async function defaultChoice(name, url, task, texts) {
  const page = await openPage(name, url);
  await page.waitForFunction(() => window.demo?.ready);
  return page.evaluate(async ({ task, texts }) => {
    await window.demo.ready;
    const p = window.demo.pipelines[task];
    if (!p) return { error: window.demo.lastError };
    const results = [];
    for (const text of texts) {
      const r = await p.run(text);
      results.push(task === 'ner' ? { rows: r.rows.map((row) => row.input_ids), entities: r.entities }
        : { input_ids: r.rows[0].input_ids, logits: r.logits[0], labels: r.labels });
    }
    return { artifact: p.bundle.artifact.recipe, bundle: document.getElementById('bundle').textContent, results };
  }, { task, texts });
}

try {
  const page = await openPage('main', spec.url);
  await page.waitForFunction(() => window.demo?.ready);
  out.seed = await page.evaluate(async () => {
    const result = await window.demo.ready;
    const bundle = document.getElementById('bundle');
    return { entities: result?.entities ?? null, error: window.demo.lastError, cold_ms: window.demo.coldMs,
      text: document.getElementById('text').value, shown: document.getElementById('highlighted').textContent,
      marks: [...document.querySelectorAll('#highlighted mark')].map((m) => m.firstChild.textContent),
      status: document.getElementById('status').textContent,
      bundle: bundle && !bundle.hidden ? bundle.textContent : null };
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

  // Measure with the default settings, cancelled once it runs: it must stop, and nothing be saved.
  await page.evaluate(() => { document.querySelector('details.measure').open = true; });
  const status = () => page.textContent('#status');
  if (await page.locator('#cancel').count()) {
    await page.click('#measure');
    await page.waitForFunction(() => /measuring bucket \d+ .*run \d+ of/.test(document.getElementById('status').textContent),
      null, { timeout: 120000 });
    const running = await status();
    await page.click('#cancel');
    const cancelled = await status();
    await page.waitForTimeout(500);
    out.cancel = { running, cancelled, later: await status(),
      ...await page.evaluate(() => ({ measuring: window.demo.measuring(), measured: window.demo.measured,
        measure_enabled: !document.getElementById('measure').disabled,
        cancel_hidden: document.getElementById('cancel').hidden,
        save_enabled: !document.getElementById('save').disabled })) };
  } else {
    out.cancel = null;
  }

  // Measure to the end with a page timer ticking every 50 ms: the page must stay responsive meanwhile.
  await page.fill('#warmup', '1');
  await page.fill('#runs', '3');
  await page.evaluate(() => {
    window.ticks = [];
    window.ticker = setInterval(() => window.ticks.push([performance.now(), document.getElementById('status').textContent]), 50);
    window.measureStart = performance.now();
  });
  await page.click('#measure');
  await page.waitForFunction(() => window.demo.measured !== null, null, { timeout: 120000 });
  out.measured = await page.evaluate(() => window.demo.measured);
  out.measure_timer = await page.evaluate(() => {
    const end = performance.now();
    clearInterval(window.ticker);
    const times = [window.measureStart, ...window.ticks.map(([t]) => t), end];
    return { ms: end - window.measureStart, ticks: window.ticks.length,
      max_gap_ms: Math.max(...times.slice(1).map((t, i) => t - times[i])),
      statuses: [...new Set(window.ticks.map(([, s]) => s))], final_status: document.getElementById('status').textContent };
  });

  const tampered = await openPage('tampered', spec.tampered_url);
  await tampered.waitForFunction(() => window.demo?.ready);
  await tampered.evaluate(() => window.demo.ready);
  out.tampered_folder = { error: await errorShown(tampered), highlighted: await tampered.textContent('#highlighted'),
    status: await tampered.textContent('#status') };
  await tampered.evaluate(() => { document.getElementById('error').hidden = true; window.demo.lastError = null; });
  await tampered.setInputFiles('#pick', spec.tampered_files);
  await tampered.waitForFunction(() => window.demo.lastError !== null, null, { timeout: 60000 });
  out.tampered_files = { error: await errorShown(tampered), status: await tampered.textContent('#status') };

  const missing = await openPage('missing', spec.missing_url);
  await missing.waitForFunction(() => window.demo?.ready);
  await missing.evaluate(() => window.demo.ready);
  out.missing = { error: await errorShown(missing), status: await missing.textContent('#status') };

  // The int4 files in pages of their own, chosen by default: the SST-2 phone file's raw logits as well, as the
  // runtime compares them; the NER phone file's entities.
  out.int4 = await defaultChoice('int4', spec.int4_url, 'classification', spec.int4_texts);
  out.int4_ner = await defaultChoice('int4_ner', spec.int4_ner_url, 'ner', spec.int4_ner_texts);

  const file = await openPage('file', spec.file_url);
  await file.waitForTimeout(1000); // what a user sees after a moment: the page must not wait for a script
  out.file = { error: await errorShown(file), status: await file.textContent('#status'),
    demo: await file.evaluate(() => typeof window.demo) };
} finally {
  await browser.close();
}
writeFileSync(outPath, JSON.stringify(out));
