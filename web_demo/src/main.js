// The page: load a bundle (from the page's folder or dropped by the user), run it, show and measure it.
// User text is only ever put into the page as text nodes, never as markup.
import { BundleError, decodeText, filesSource, folderSource, pipeline, ranked, scoreFunction, scores, unicodeTables,
  WordPieceTokenizer } from 'pocketbert';
import { latencyRecord, resultsFile } from './measure.js';

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
// a bundle missing from the page's folder: how this page's build puts it there
const MISSING_FIX = 'put the whole bundle there: node build.mjs --ner or --classification BUNDLE_DIR copies it '
  + '(docs/web.md), or drop the bundle folder onto this page';
const params = new URLSearchParams(location.search);
const precision = params.get('precision') || null;
const $ = (id) => document.getElementById(id);
const pipelines = {};
let task = params.get('task') === 'classification' ? 'classification' : 'ner';

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
  try {
    // one thread: the page is served without cross-origin isolation (docs/web.md)
    // a pin in the address (?ner_pin=…, as the Android app passes the pins its build recorded) pins that task's bundle
    const expectedSha256 = expectedTask ? params.get(`${expectedTask}_pin`) : null;
    const loaded = await pipeline(source, { precision, task: expectedTask, threads: 1, expectedSha256 });
    pipelines[loaded.task] = loaded;
    describe(loaded);
    return loaded;
  } catch (err) {
    status(`${source.describe()} was not loaded: see the message below`);
    throw err;
  }
}

/** The bundle's name: the built-in model it was converted from, else its checkpoint folder's name. */
function bundleName(manifest) {
  return manifest.source?.builtin ?? manifest.source?.checkpoint?.split(/[\\/]/).filter(Boolean).at(-1)
    ?? manifest.architecture ?? 'bundle';
}

function describe(p) {
  const a = p.bundle.artifact;
  status(`ready: ${p.task}`);
  const lite = p.info.runtime;
  $('bundle').textContent = `${bundleName(p.bundle.manifest)} (${p.task}), ${a.recipe}: ${a.file}, `
    + `${(p.bundle.model.length / 1e6).toFixed(1)} MB, every file SHA-256 checked; `
    + `buckets ${p.model.buckets.join(', ')}; from ${p.bundle.where}; pin sha256 ${p.bundle.pin}; `
    + `LiteRT.js ${lite.file} (${lite.simd}, ${lite.threads} thread${lite.threads === 1 ? '' : 's'})`;
  $('bundle').hidden = false;
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
    const pipeline = pipelines[task] ?? await load(folderSource(params.get(task) || `bundles/${task}/`, MISSING_FIX), task);
    const text = $('text').value;
    const t0 = performance.now();
    const result = await pipeline.run(text, { aggregation: 'simple' });
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

let measuring = null; // the running measurement: {worker, finish}

/** Time every bucket in a worker (measure-worker.js), showing progress; null if cancelled or failed. */
function measure() {
  const pipeline = pipelines[task];
  if (!pipeline) { showError(new Error('run the model once first')); return Promise.resolve(null); }
  if (measuring) return Promise.resolve(null);
  const warmup = Number($('warmup').value), runs = Number($('runs').value);
  if (!Number.isInteger(warmup) || warmup < 0 || !Number.isInteger(runs) || runs < 1) {
    showError(new Error('warm-up must be a whole number ≥ 0 and runs one ≥ 1: correct them and measure again'));
    return Promise.resolve(null);
  }
  const { tokenizer, bundle } = pipeline;
  const records = [];
  let buckets = [];
  demo.measured = null;
  $('error').hidden = true;
  $('save').disabled = true;
  $('measure').disabled = true;
  $('cancel').hidden = false;
  $('measurements').replaceChildren(row(['bucket', 'p50 ms', 'p90 ms', 'runs'], 'th'));
  status('measuring: loading LiteRT and the model in a worker …');
  const worker = new Worker(new URL('measure-worker.js', location.href));
  return new Promise((resolve) => {
    const finish = (result, message) => {
      worker.terminate();
      measuring = null;
      $('measure').disabled = false;
      $('cancel').hidden = true;
      status(message);
      resolve(result);
    };
    measuring = { worker, finish };
    worker.onmessage = ({ data }) => {
      if (data.type === 'ready') {
        buckets = data.buckets;
      } else if (data.type === 'progress') {
        const phase = data.done <= warmup ? `warm-up run ${data.done} of ${warmup}`
          : `run ${data.done - warmup} of ${runs}`;
        status(`measuring bucket ${data.bucket} (${buckets.indexOf(data.bucket) + 1} of ${buckets.length}): ${phase}`);
      } else if (data.type === 'bucket') {
        const { timed } = data.timing;
        records.push(latencyRecord({ bundle, bucket: data.bucket, timing: data.timing }));
        $('measurements').append(row([data.bucket, timed.p50_ms.toFixed(2), timed.p90_ms.toFixed(2), runs]));
      } else if (data.type === 'done') {
        demo.measured = resultsFile(records);
        $('save').disabled = false;
        finish(demo.measured, `measured buckets ${buckets.join(', ')} (${warmup} warm-up and ${runs} timed runs each): `
          + 'Save JSON writes the record');
      } else if (data.type === 'error') {
        showError(new Error(`the measurement failed: ${data.message}`));
        finish(null, 'measurement failed: see the message below');
      }
    };
    worker.onerror = (e) => {
      e.preventDefault();
      showError(new Error(`the measurement's worker failed: ${e.message || 'measure-worker.js could not be run'}; `
        + 'rebuild the page (node build.mjs) and reload it'));
      finish(null, 'measurement failed: see the message below');
    };
    // a copy: the page keeps its own model bytes
    const model = bundle.model.slice();
    worker.postMessage({ model, wasm: pipeline.info.runtime.wasm, task: pipeline.task, warmup, runs, vocabSize: tokenizer.vocab.length,
      clsId: tokenizer.cls.id, sepId: tokenizer.sep.id }, [model.buffer]);
  });
}

function cancelMeasure() {
  if (!measuring) return;
  const done = $('measurements').rows.length - 1;
  measuring.finish(null, `measurement cancelled after ${done} bucket(s): nothing to save; Measure starts again`);
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

const demo = { pipelines, run, measure, loadFiles, setTask,
  load: (base, expectedTask) => load(folderSource(base, MISSING_FIX), expectedTask),
  coldMs: null, last: null, lastError: null, measured: null, measuring: () => measuring !== null,
  // the package's modules, for the test suite's golden-vector and fuzz checks in this browser
  modules: { WordPieceTokenizer, tables: async () => unicodeTables(), decodeText, ranked, scoreFunction, scores } };
window.demo = demo;

for (const input of document.querySelectorAll('input[name=task]')) {
  input.addEventListener('change', () => { setTask(input.value); run(); });
}
$('run').addEventListener('click', run);
$('measure').addEventListener('click', measure);
$('cancel').addEventListener('click', cancelMeasure);
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
/** Measure as the URL asks (?measure=1&warmup=N&runs=N: the Android app's intent extras), handing the record, or
 * what went wrong, to the app's shell when there is one. */
async function measureFromUrl() {
  for (const name of ['warmup', 'runs']) if (params.has(name)) $(name).value = params.get(name);
  document.querySelector('details.measure').open = true;
  const record = await measure();
  const report = record ?? { error: $('error').hidden ? 'the measurement did not finish' : $('error').textContent };
  window.PocketBertShell?.measured(JSON.stringify(report));
  return record;
}

// the Android app's WebView: no drag and drop or file picker there, a layout for the phone's screen
if (params.get('shell') === 'android') {
  document.body.classList.add('app');
  document.querySelector('h1').textContent = 'PocketBERT on this phone';
}
setTask(task);
demo.ready = params.get('autorun') === '0' ? Promise.resolve(null) : run();
if (params.get('measure') === '1') demo.measuredFromUrl = demo.ready.then(measureFromUrl);
