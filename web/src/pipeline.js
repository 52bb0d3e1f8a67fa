// Tokenizer -> bucketed LiteRT model -> decoding, for one bundle: what runtime/ner.py and
// runtime/classification.py do, with the TFLite artifact's buckets. `pipeline()` is the package's entry point.
import { BucketedModel, threadsFor } from './model.js';
import { BundleError, checkModelAgreement, filesSource, folderSource, inputLength, openBundle, parsePin } from './bundle.js';
import { WordPieceTokenizer, defaultStride, indexText } from './tokenizer.js';
import { AGGREGATIONS, decodeText } from './ner.js';
import { ranked, scoreFunction, scores } from './classification.js';
import { UnicodeTables } from './unicode-tables.js';
import { UNICODE_TABLES } from './unicode-tables-text.js';

let tables = null;
/** The tokenizer's Unicode tables, parsed once. */
export function unicodeTables() {
  tables ??= new UnicodeTables(UNICODE_TABLES);
  return tables;
}

export class Pipeline {
  /** bundle: openBundle()'s result; tables: UnicodeTables; runtime: {wasm, threads} for BucketedModel.load. */
  static async load(bundle, tables = unicodeTables(), runtime = {}) {
    const tokenizer = new WordPieceTokenizer(bundle.vocab, bundle.manifest.tokenizer, tables);
    const model = await BucketedModel.load(bundle.model, runtime);
    try {
      checkModelAgreement(bundle.manifest, bundle.artifact, model);
    } catch (err) {
      model.delete();
      throw err;
    }
    return new Pipeline(bundle, tokenizer, model);
  }

  constructor(bundle, tokenizer, model) {
    this.bundle = bundle;
    this.task = bundle.manifest.task;
    this.labels = bundle.labels;
    this.tokenizer = tokenizer;
    this.model = model;
    // the bundle's length, as the Python runtime and the app use (this model's buckets only limit a
    // manifest that lists none)
    this.maxLength = Math.min(inputLength(bundle.manifest), model.maxLength);
    this.stride = defaultStride(this.maxLength);
    this.function = scoreFunction(bundle.manifest.problem_type, this.labels.length);
    this.decoding = { labels: this.labels, unkId: tokenizer.unk.id, wordAware: tokenizer.wordAware,
      detokenize: (tokens) => tokenizer.detokenize(tokens) };
  }

  /** The model rows a text gives: NER windows, or one truncated row (of a text or a pair) for classification. */
  rows(text) {
    if (this.task === 'ner') return this.tokenizer.windows(text, this.maxLength, this.stride);
    return [Array.isArray(text) ? this.tokenizer.encodePair(text[0], text[1], this.maxLength)
      : this.tokenizer.encode(text, this.maxLength)];
  }

  /** NER: {entities (code-point offsets, plus start16/end16 in UTF-16 units), rows, logits}; classification:
   * {labels (all, best first), rows, logits}. */
  async run(text, aggregation = 'simple', ignoreLabels = ['O']) {
    if (!this.model.compiled) throw new BundleError('the pipeline was disposed', 'create a new one with pipeline()');
    const rows = this.rows(text);
    const logits = [];
    for (const row of rows) logits.push(await this.model.run(row, this.task));
    if (this.task === 'classification') {
      return { rows, logits, labels: ranked(scores(logits[0], this.function), this.labels) };
    }
    const { cps, utf16 } = indexText(text);
    const step = this.maxLength - 2 - this.stride;
    const entities = decodeText(cps, rows, logits, aggregation, this.decoding, ignoreLabels, step)
      .map((e) => ({ ...e, start16: utf16[e.start], end16: utf16[e.end] }));
    return { rows, logits, entities };
  }
}

const TASK_NAMES = { ner: 'ner', 'token-classification': 'ner', classification: 'classification',
  'text-classification': 'classification', 'sentiment-analysis': 'classification' };

function sourceOf(bundle) {
  if (typeof bundle === 'string' || bundle instanceof URL) return folderSource(String(bundle));
  if (bundle && typeof bundle.read === 'function' && typeof bundle.describe === 'function') return bundle;
  if (bundle && typeof bundle[Symbol.iterator] === 'function') return filesSource(bundle);
  throw new TypeError('pipeline(bundle): bundle must be the URL of a bundle folder, a {describe, read} source, '
    + 'or the bundle\'s File objects');
}

function checkText(text, pairs) {
  if (typeof text === 'string') return;
  if (pairs && Array.isArray(text) && text.length === 2 && text.every((t) => typeof t === 'string')) return;
  throw new TypeError(`the input must be a string${pairs ? ' or a pair [text, textPair] of strings' : ''}, `
    + `not ${Array.isArray(text) ? `an array of ${text.length}` : typeof text}`);
}

/**
 * Open a PocketBERT bundle and return its task's callable pipeline (docs/web.md; types/index.d.ts).
 *
 * @param {string | URL | {describe(): string, read(name: string): Promise<Uint8Array>} | Iterable<File>} bundle
 *   the bundle folder's URL (relative to the page), a source of its files, or its File objects
 * @param {object} [options]
 * @param {string} [options.task] refuse a bundle of another task: 'ner' ('token-classification') or
 *   'classification' ('text-classification', 'sentiment-analysis')
 * @param {string} [options.precision] the TFLite file to run (fp32, int8-dynamic, int4-dynamic, …); default the
 *   runtime's order: int8-dynamic, other int8, int4, fp16, fp32
 * @param {number} [options.threads] XNNPACK threads; more than 1 only in a cross-origin isolated page
 * @param {string} [options.expectedSha256] the bundle's pin: SHA-256 of its manifest.json
 * @param {string | URL} [options.wasm] folder of LiteRT.js's WebAssembly files (default: the package's own)
 * @returns {Promise<Function>} `await p(text, options)`: NER entities, or `[{label, score}]`; with `info`,
 *   `run()` and `dispose()`
 * @throws {BundleError} a bundle that cannot be used: `problem` and `fix`
 */
export async function pipeline(bundle, { task = null, precision = null, threads = null, expectedSha256 = null,
  wasm = null } = {}) {
  const source = sourceOf(bundle);
  if (task !== null && !(task in TASK_NAMES)) {
    throw new TypeError(`task ${JSON.stringify(task)} is not one of ${Object.keys(TASK_NAMES).join(', ')}`);
  }
  parsePin(expectedSha256);
  const used = threadsFor(threads);
  const opened = await openBundle(source, precision, expectedSha256);
  const want = task && TASK_NAMES[task];
  if (want && opened.manifest.task !== want) {
    throw new BundleError(`${opened.where} holds a ${opened.manifest.task} bundle, not ${want}`,
      `load a ${want === 'ner' ? 'NER' : 'classification'} bundle there (pocketbert-convert … --task ${want}), or `
      + `ask for task '${opened.manifest.task}'`);
  }
  const engine = await Pipeline.load(opened, unicodeTables(), { wasm, threads: used });
  return callable(engine);
}

function callable(engine) {
  const { bundle, model } = engine;
  const ner = engine.task === 'ner';
  const run = ner
    ? async (text, { aggregation = 'simple', ignoreLabels = ['O'] } = {}) => {
      checkText(text, false);
      if (!AGGREGATIONS.includes(aggregation)) {
        throw new TypeError(`aggregation ${JSON.stringify(aggregation)} is not one of ${AGGREGATIONS.join(', ')}`);
      }
      return engine.run(text, aggregation, ignoreLabels);
    }
    : async (text) => {
      checkText(text, true);
      return engine.run(text);
    };
  const call = ner
    ? async (text, options) => (await run(text, options)).entities
    : async (text, { topK = 1 } = {}) => {
      if (topK !== null && !(Number.isInteger(topK) && topK >= 1) && topK !== Infinity) {
        throw new TypeError(`topK ${JSON.stringify(topK)} must be a whole number ≥ 1, or null for every label`);
      }
      return (await run(text)).labels.slice(0, topK ?? undefined);
    };
  const info = Object.freeze({ task: engine.task, labels: [...engine.labels], recipe: bundle.artifact.recipe,
    precision: bundle.artifact.precision, file: bundle.artifact.file, bytes: bundle.model.length, pin: bundle.pin,
    where: bundle.where, buckets: [...model.buckets], maxLength: engine.maxLength,
    runtime: Object.freeze({ ...model.runtime }) });
  return Object.assign(call, {
    task: engine.task, labels: info.labels, info, run,
    bundle, model, tokenizer: engine.tokenizer, maxLength: engine.maxLength,
    dispose: () => model.delete(),
  });
}
