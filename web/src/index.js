// pocketbert: PocketBERT bundles (NER, text classification) in the browser with LiteRT.js. docs/web.md.
//
//   import { pipeline } from 'pocketbert';
//   const ner = await pipeline('/models/ner-phone/');
//   const entities = await ner('Jeff Dean works at Google.');
export { pipeline, Pipeline, unicodeTables } from './pipeline.js';
export { BundleError, SCHEMA_VERSION, chooseArtifact, filesSource, folderSource, inputLength, openBundle,
  precisionRank } from './bundle.js';
export { BucketedModel, liteRtLog, loadRuntime, threadsFor, wasmBuild } from './model.js';
export { WordPieceTokenizer, defaultStride, detokenize, indexText, longestFirst } from './tokenizer.js';
export { AGGREGATIONS, decodeText } from './ner.js';
export { ranked, scoreFunction, scores } from './classification.js';
export { UnicodeTables } from './unicode-tables.js';
