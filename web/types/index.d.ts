// Type declarations of the pocketbert package (src/*.js). docs/web.md describes the API.

/** The tasks a bundle may hold, and the names transformers.js users know for them. */
export type Task = 'ner' | 'classification';
export type TaskName = Task | 'token-classification' | 'text-classification' | 'sentiment-analysis';

/** A model file's precision in the bundle's manifest (`tflite:<precision>` recipes). */
export type Precision = 'fp32' | 'fp16' | 'int8-dynamic' | 'int4-dynamic' | (string & {});

/** NER word aggregation, as Hugging Face's token-classification pipeline. */
export type Aggregation = 'none' | 'simple' | 'first' | 'average' | 'max';

/** Where a bundle's files come from: `read(name)` gives a file's bytes or throws a BundleError. */
export interface BundleSource {
  describe(): string;
  read(name: string): Promise<Uint8Array>;
}

export interface PipelineOptions {
  /** Refuse a bundle of another task (BundleError). */
  task?: TaskName | null;
  /** The TFLite file's precision; default: int8-dynamic, other int8, int4, fp16, fp32 (the Android app's order). */
  precision?: Precision | null;
  /** XNNPACK threads: more than 1 needs a cross-origin isolated page (then LiteRT.js's threaded build runs);
   * default min(4, hardwareConcurrency) there, else 1. */
  threads?: number | null;
  /** The bundle's pin: the SHA-256 of its manifest.json, as the converter prints it ("sha256:" optional). */
  expectedSha256?: string | null;
  /** The folder URL of LiteRT.js's WebAssembly files; default: the package's own (see docs/web.md). */
  wasm?: string | URL | null;
}

/** Which LiteRT.js WebAssembly build runs the model. */
export interface RuntimeInfo {
  /** Folder URL the build was loaded from. */
  readonly wasm: string;
  /** litert_wasm_threaded_internal.js, litert_wasm_internal.js or litert_wasm_compat_internal.js. */
  readonly file: string;
  readonly threaded: boolean;
  readonly threads: number;
  readonly simd: 'relaxed-simd' | 'simd128';
}

/** What the pipeline runs. */
export interface PipelineInfo {
  readonly task: Task;
  readonly labels: readonly string[];
  /** e.g. "tflite:int4-dynamic" */
  readonly recipe: string;
  readonly precision: Precision;
  /** The model file in the bundle, e.g. "model.int4-dynamic.tflite". */
  readonly file: string;
  readonly bytes: number;
  /** SHA-256 of the bundle's manifest.json. */
  readonly pin: string;
  /** Where the bundle came from (its folder URL). */
  readonly where: string;
  /** Sequence lengths the model file runs (its seq_<length> signatures). */
  readonly buckets: readonly number[];
  /** Longest row fed to the model, [CLS] and [SEP] included. */
  readonly maxLength: number;
  readonly runtime: RuntimeInfo;
}

/** One NER entity. Offsets: `start`/`end` in code points (as Python counts), `start16`/`end16` in UTF-16 units
 * (`text.slice(start16, end16)`). */
export interface Entity {
  /** Grouped entities (aggregation other than 'none'): the tag, e.g. "PER". */
  entity_group?: string;
  /** aggregation 'none': the token's label, e.g. "B-PER". */
  entity?: string;
  /** aggregation 'none': the token's index in its model row. */
  index?: number;
  score: number;
  word: string;
  start: number;
  end: number;
  start16: number;
  end16: number;
}

export interface LabelScore {
  label: string;
  score: number;
}

/** One model row (a window of a NER text, or a classification input). */
export interface Row {
  input_ids: number[];
  tokens: string[];
  token_type_ids: number[];
  attention_mask: number[];
  special_tokens_mask: number[];
  offsets: [number, number][];
  offsets_utf16: [number, number][];
  truncated?: boolean;
}

export interface NerOptions {
  aggregation?: Aggregation;
  /** Tags left out of the result; default ['O']. */
  ignoreLabels?: string[];
}

export interface ClassifyOptions {
  /** How many labels, best first; default 1; null: all. */
  topK?: number | null;
}

interface PipelineBase {
  readonly task: Task;
  readonly labels: readonly string[];
  readonly info: PipelineInfo;
  /** The longest row fed to the model. */
  readonly maxLength: number;
  /** Lower level, for checks and benchmarks: the opened bundle (manifest, chosen artifact, model bytes, pin),
   * the compiled model (one signature per bucket; `model.run(row, task)` times the model alone) and the
   * tokenizer (`tokenizer.encode(text, maxLength)` gives such a row). */
  readonly bundle: OpenedBundle;
  readonly model: BucketedModel;
  readonly tokenizer: WordPieceTokenizer;
  /** Frees the model's WebAssembly memory; calling the pipeline afterwards throws a BundleError. */
  dispose(): void;
}

export interface NerPipeline extends PipelineBase {
  readonly task: 'ner';
  (text: string, options?: NerOptions): Promise<Entity[]>;
  /** The entities with the model rows and logits they came from. */
  run(text: string, options?: NerOptions): Promise<{ entities: Entity[]; rows: Row[]; logits: number[][][] }>;
}

export type TextInput = string | [string, string];

export interface ClassificationPipeline extends PipelineBase {
  readonly task: 'classification';
  (text: TextInput, options?: ClassifyOptions): Promise<LabelScore[]>;
  /** Every label's score (best first) with the model row and logits. */
  run(text: TextInput): Promise<{ labels: LabelScore[]; rows: Row[]; logits: number[][] }>;
}

export type TextPipeline = NerPipeline | ClassificationPipeline;

/**
 * Open a PocketBERT bundle and return its task's pipeline. Every file read is checked against the manifest's
 * size and SHA-256; the manifest against the schema and against its files (labels, vocabulary size, the model's
 * buckets and inputs). Refusals are BundleErrors with `problem` and `fix`.
 * @param bundle the bundle folder's URL (relative to the page), a BundleSource, or the bundle's File objects
 */
export function pipeline(bundle: string | URL | BundleSource | Iterable<File>,
  options: PipelineOptions & { task: 'ner' | 'token-classification' }): Promise<NerPipeline>;
export function pipeline(bundle: string | URL | BundleSource | Iterable<File>,
  options: PipelineOptions & { task: 'classification' | 'text-classification' | 'sentiment-analysis' }): Promise<ClassificationPipeline>;
export function pipeline(bundle: string | URL | BundleSource | Iterable<File>, options?: PipelineOptions): Promise<TextPipeline>;

/** A bundle that cannot be used: what is wrong (`problem`) and what to do (`fix`). */
export class BundleError extends Error {
  constructor(problem: string, fix: string);
  readonly problem: string;
  readonly fix: string;
}

export const SCHEMA_VERSION: number;
export const AGGREGATIONS: readonly Aggregation[];

/** Files fetched from a folder URL; `fix`: the advice when one is missing. */
export function folderSource(base: string | URL, fix?: string | null): BundleSource;
/** Files the user dropped or picked. */
export function filesSource(files: Iterable<File>): BundleSource;

// Lower-level pieces (the demo page and the tests use them); their shapes may change between minor versions.
export interface OpenedBundle {
  manifest: Record<string, any>;
  artifact: { recipe: string; backend: string; precision: string; file: string; details?: Record<string, any> };
  labels: string[];
  vocab: string[];
  model: Uint8Array;
  pin: string;
  where: string;
}
export function openBundle(source: BundleSource, precision?: string | null, expectedSha256?: string | null): Promise<OpenedBundle>;
export function chooseArtifact(manifest: Record<string, any>, precision?: string | null): OpenedBundle['artifact'];
export function inputLength(manifest: Record<string, any>): number;
export function precisionRank(precision: string): number;

export class UnicodeTables {
  constructor(text: string);
}
export function unicodeTables(): UnicodeTables;

export class WordPieceTokenizer {
  constructor(vocab: string[], settings: Record<string, any>, tables: UnicodeTables);
  readonly vocab: string[];
  readonly cls: { token: string; id: number };
  readonly sep: { token: string; id: number };
  readonly unk: { token: string; id: number };
  encode(text: string, maxLength: number): Row;
  encodePair(text: string, textPair: string, maxLength: number): Row;
  windows(text: string, maxLength: number, stride: number): Row[];
  detokenize(tokens: string[]): string;
}
export function detokenize(tokens: string[], prefix?: string): string;
export function defaultStride(maxLength: number): number;
export function indexText(text: string): { cps: number[]; utf16: number[] };
export function longestFirst(n1: number, n2: number, budget: number): [number, number];

export class BucketedModel {
  static load(bytes: Uint8Array, options?: { wasm?: string | URL | null; threads?: number }): Promise<BucketedModel>;
  readonly buckets: number[];
  readonly maxLength: number;
  readonly runtime: RuntimeInfo | null;
  bucketFor(length: number): number;
  run(row: Pick<Row, 'input_ids' | 'attention_mask' | 'token_type_ids'>, task: Task): Promise<number[] | number[][]>;
  delete(): void;
}
export function loadRuntime(wasm?: string | URL | null, threaded?: boolean): Promise<Omit<RuntimeInfo, 'threads'>>;
export function threadsFor(requested?: number | null): number;
export function wasmBuild(relaxedSimd: boolean, threaded: boolean): { file: string; threaded: boolean; simd: 'relaxed-simd' | 'simd128' };
export function liteRtLog(line: string): void;

export class Pipeline {
  static load(bundle: OpenedBundle, tables?: UnicodeTables, runtime?: { wasm?: string | URL | null; threads?: number }): Promise<Pipeline>;
  readonly task: Task;
  readonly bundle: OpenedBundle;
  readonly model: BucketedModel;
  readonly tokenizer: WordPieceTokenizer;
  readonly maxLength: number;
  run(text: TextInput, aggregation?: Aggregation, ignoreLabels?: string[]): Promise<{ rows: Row[]; logits: any[];
    entities?: Entity[]; labels?: LabelScore[] }>;
}

export function scoreFunction(problemType: string | null | undefined, numLabels: number): 'softmax' | 'sigmoid' | 'none';
export function scores(logits: number[], fn: 'softmax' | 'sigmoid' | 'none'): Float32Array;
export function ranked(row: ArrayLike<number>, labels: string[], topK?: number | null): LabelScore[];
export function decodeText(cps: number[], windows: any[], logits: number[][][], aggregation: Aggregation,
  how: { labels: string[]; unkId: number | null; wordAware: boolean; detokenize(tokens: string[]): string },
  ignoreLabels?: string[], step?: number): Omit<Entity, 'start16' | 'end16'>[];
