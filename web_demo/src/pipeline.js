// Tokenizer -> bucketed LiteRT model -> decoding, for one bundle: what runtime/ner.py and
// runtime/classification.py do, with the TFLite artifact's buckets.
import { BucketedModel } from './model.js';
import { inputLength } from './bundle.js';
import { WordPieceTokenizer, defaultStride, indexText } from './tokenizer.js';
import { decodeText } from './ner.js';
import { ranked, scoreFunction, scores } from './classification.js';

export class Pipeline {
  /** bundle: openBundle()'s result; tables: UnicodeTables; wasmFolder: LiteRT's WebAssembly files. */
  static async load(bundle, tables, wasmFolder) {
    const tokenizer = new WordPieceTokenizer(bundle.vocab, bundle.manifest.tokenizer, tables);
    const model = await BucketedModel.load(bundle.model, wasmFolder);
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

  /** The model rows a text gives: NER windows, or one truncated row for classification. */
  rows(text) {
    return this.task === 'ner' ? this.tokenizer.windows(text, this.maxLength, this.stride)
      : [this.tokenizer.encode(text, this.maxLength)];
  }

  /** NER: {entities (code-point offsets, plus start16/end16 for display), rows}; classification: {labels, rows}. */
  async run(text, aggregation = 'simple') {
    const rows = this.rows(text);
    const logits = [];
    for (const row of rows) logits.push(await this.model.run(row, this.task));
    if (this.task === 'classification') {
      return { rows, logits, labels: ranked(scores(logits[0], this.function), this.labels) };
    }
    const { cps, utf16 } = indexText(text);
    const step = this.maxLength - 2 - this.stride;
    const entities = decodeText(cps, rows, logits, aggregation, this.decoding, ['O'], step)
      .map((e) => ({ ...e, start16: utf16[e.start], end16: utf16[e.end] }));
    return { rows, logits, entities };
  }
}
