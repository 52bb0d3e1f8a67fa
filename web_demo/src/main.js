// The page: load a bundle (from the page's folder or dropped by the user), run it, show and measure it.
// User text is only ever put into the page as text nodes, never as markup.
import { BundleError, filesSource, folderSource, openBundle } from './bundle.js';
import { UnicodeTables } from './unicode-tables.js';
import { Pipeline } from './pipeline.js';
import { latencyRecord, resultsFile, syntheticRow, timeRuns } from './measure.js';
import { WordPieceTokenizer } from './tokenizer.js';
import { decodeText } from './ner.js';
import { ranked, scoreFunction, scores } from './classification.js';

const EXAMPLES = {
  ner: [
    'Jeff Dean is a computer scientist at Google in California.',
    'Angela Merkel met Emmanuel Macron in Paris to discuss the European Union budget.',
    'Lionel Messi joined Inter Miami after winning the World Cup with Argentina.',
  ],
  classification: [
    'A warm, funny and beautifully acted film.',
    'The plot is thin and the jokes fall flat.',
    'It is neither the best nor the worst thing I have seen this year.',
  ],
};
const WASM = new URL('wasm/', location.href).href;
const params = new URLSearchParams(location.search);
const precision = params.get('precision') || null;
const $ = (id) => document.getElementById(id);
const pipelines = {};
let tablesPromise = null;
let task = params.get('task') === 'classification' ? 'classification' : 'ner';

function tables() {
  tablesPromise ??= fetch('unicode-tables.txt').then((r) => {
    if (!r.ok) throw new Error(`unicode-tables.txt could not be loaded (HTTP ${r.status})`);
    return r.text();
  }).then((text) => new UnicodeTables(text));
  return tablesPromise;
}

function showError(err) {
  const box = $('error');
  box.textContent = err instanceof BundleError ? `${err.problem}. Fix: ${err.fix}.` : `Error: ${err.message ?? err}`;
  box.hidden = false;
}

function status(text) {
  $('status').textContent = text;
}

async function load(source, expectedTask = null) {
  $('error').hidden = true;
  status(`loading ${source.describe()} …`);
  const bundle = await openBundle(source, precision);
  if (expectedTask && bundle.manifest.task !== expectedTask) {
    throw new BundleError(`${source.describe()} holds a ${bundle.manifest.task} bundle, not ${expectedTask}`,
      `put the ${expectedTask} bundle there`);
  }
  const pipeline = await Pipeline.load(bundle, await tables(), WASM);
  pipelines[bundle.manifest.task] = pipeline;
  describe(pipeline);
  return pipeline;
}

function describe(p) {
  const a = p.bundle.artifact;
  status(`${p.task}: ${a.file} (${a.recipe}, ${(p.bundle.model.length / 1e6).toFixed(1)} MB, SHA-256 checked), `
    + `buckets ${p.model.buckets.join(', ')}, from ${p.bundle.where}`);
}

function setTask(next) {
  task = next;
  for (const input of document.querySelectorAll('input[name=task]')) input.checked = input.value === task;
  const examples = $('examples');
  examples.replaceChildren(...EXAMPLES[task].map((text) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = text.length > 48 ? `${text.slice(0, 45)}…` : text;
    button.title = text;
    button.addEventListener('click', () => { $('text').value = text; run(); });
    return button;
  }));
  $('text').value = EXAMPLES[task][0];
  if (pipelines[task]) describe(pipelines[task]);
}

function colorOf(type) {
  return { PER: 'per', ORG: 'org', LOC: 'loc', MISC: 'misc' }[type] ?? 'other';
}

function showEntities(text, entities) {
  const out = [];
  let at = 0;
  for (const e of entities) {
    if (e.start16 > at) out.push(document.createTextNode(text.slice(at, e.start16)));
    const mark = document.createElement('mark');
    mark.className = `entity ${colorOf(e.entity_group)}`;
    mark.textContent = text.slice(e.start16, e.end16);
    const tag = document.createElement('span');
    tag.className = 'tag';
    tag.textContent = e.entity_group;
    mark.append(tag);
    out.push(mark);
    at = e.end16;
  }
  out.push(document.createTextNode(text.slice(at)));
  $('highlighted').replaceChildren(...out);
  const rows = entities.map((e) => row([e.word, e.entity_group, e.score.toFixed(4), `${e.start}–${e.end}`]));
  $('entities').replaceChildren(row(['word', 'type', 'score', 'characters'], 'th'), ...rows);
  $('entities').hidden = false;
  $('labels').hidden = true;
}

function showLabels(labels) {
  const rows = labels.map((l) => {
    const tr = row([l.label, l.score.toFixed(4)]);
    const bar = document.createElement('td');
    const fill = document.createElement('div');
    fill.className = 'bar';
    fill.style.width = `${Math.max(0, Math.min(1, l.score)) * 100}%`;
    bar.append(fill);
    tr.append(bar);
    return tr;
  });
  $('highlighted').replaceChildren();
  $('labels').replaceChildren(row(['label', 'score', ''], 'th'), ...rows);
  $('labels').hidden = false;
  $('entities').hidden = true;
}

function row(cells, kind = 'td') {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement(kind);
    td.textContent = cell;
    tr.append(td);
  }
  return tr;
}

async function run() {
  try {
    const pipeline = pipelines[task] ?? await load(folderSource(params.get(task) || `bundles/${task}/`), task);
    const text = $('text').value;
    const t0 = performance.now();
    const result = await pipeline.run(text, 'simple');
    const ms = performance.now() - t0;
    if (task === 'ner') showEntities(text, result.entities); else showLabels(result.labels);
    const buckets = result.rows.map((r) => pipeline.model.bucketFor(r.input_ids.length));
    $('latency').textContent = `${ms.toFixed(1)} ms on this device (tokenization, LiteRT, decoding; `
      + `${result.rows.length} row(s), bucket ${buckets.join(', ')})`
      + (result.rows[0].truncated ? `; the text was cut to ${pipeline.maxLength} tokens` : '');
    demo.coldMs ??= performance.now();
    demo.last = result;
    return result;
  } catch (err) {
    showError(err);
    demo.lastError = err instanceof BundleError ? err.problem : String(err.message ?? err);
    return null;
  }
}

async function measure() {
  const pipeline = pipelines[task];
  if (!pipeline) { showError(new Error('run the model once first')); return null; }
  const warmup = Number($('warmup').value), runs = Number($('runs').value);
  const { tokenizer, model, bundle } = pipeline;
  const records = [];
  $('measurements').replaceChildren(row(['bucket', 'p50 ms', 'p90 ms', 'runs'], 'th'));
  for (const bucket of model.buckets) {
    status(`measuring bucket ${bucket} …`);
    const input = syntheticRow(bucket, tokenizer.vocab.length, tokenizer.cls.id, tokenizer.sep.id);
    const timing = await timeRuns(() => model.run(input, pipeline.task), warmup, runs);
    records.push(latencyRecord({ bundle, bucket, timing }));
    $('measurements').append(row([bucket, timing.timed.p50_ms.toFixed(2), timing.timed.p90_ms.toFixed(2), runs]));
  }
  describe(pipeline);
  demo.measured = resultsFile(records);
  $('save').disabled = false;
  return demo.measured;
}

function save() {
  const blob = new Blob([JSON.stringify(demo.measured, null, 1)], { type: 'application/json' });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = `browser-${task}-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}.json`;
  a.click();
  URL.revokeObjectURL(a.href);
}

async function filesOfDrop(items) { // a dropped folder: its files (one level), else the dropped files
  const files = [];
  const entries = [...items].map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
  for (const entry of entries) {
    if (entry.isDirectory) {
      const children = await new Promise((ok, fail) => entry.createReader().readEntries(ok, fail));
      for (const child of children.filter((c) => c.isFile)) files.push(await new Promise((ok, fail) => child.file(ok, fail)));
    } else {
      files.push(await new Promise((ok, fail) => entry.file(ok, fail)));
    }
  }
  return files;
}

async function loadFiles(files) {
  try {
    const pipeline = await load(filesSource(files));
    setTask(pipeline.task);
    return run();
  } catch (err) {
    showError(err);
    demo.lastError = err instanceof BundleError ? err.problem : String(err.message ?? err);
    return null;
  }
}

const demo = { pipelines, run, measure, loadFiles, setTask, load: (base, expectedTask) => load(folderSource(base), expectedTask),
  coldMs: null, last: null, lastError: null, measured: null,
  // the page's own modules, for the test suite's golden-vector and fuzz checks in this browser
  modules: { WordPieceTokenizer, tables, decodeText, ranked, scoreFunction, scores } };
window.demo = demo;

for (const input of document.querySelectorAll('input[name=task]')) {
  input.addEventListener('change', () => { setTask(input.value); run(); });
}
$('run').addEventListener('click', run);
$('measure').addEventListener('click', measure);
$('save').addEventListener('click', save);
$('pick').addEventListener('change', (e) => loadFiles(e.target.files));
const drop = $('drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', async (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  loadFiles(await filesOfDrop(e.dataTransfer.items));
});
setTask(task);
demo.ready = params.get('autorun') === '0' ? Promise.resolve(null) : run();
