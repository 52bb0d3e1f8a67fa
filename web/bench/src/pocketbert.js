// The one place the benchmark touches PocketBERT's web code: `pocketbertPipeline(bundleUrl, options)`, shaped
// like the package's `pipeline()` (a callable; `ner(text, {aggregation})` -> entities with code-point offsets,
// `classify(text, {topK})` -> [{label, score}], `dispose()`, `info`). Until the package is published this
// drives the package's modules (web/src, or build.mjs --web-src); then this file becomes one line:
//   export { pipeline as pocketbertPipeline } from 'pocketbert-web-src/index.js';
import { folderSource, openBundle } from 'pocketbert-web-src/bundle.js';
import { Pipeline } from 'pocketbert-web-src/pipeline.js';
import { UnicodeTables } from 'pocketbert-web-src/unicode-tables.js';

const LITERT_WASM = new URL('/litert/', location.href).href;

export async function pocketbertPipeline(bundleUrl, { precision = null, threads = 1 } = {}) {
  if (threads !== 1) throw new Error('the demo page code runs LiteRT.js single-threaded only');
  const tables = new UnicodeTables(await (await fetch('/unicode-tables.txt')).text());
  const bundle = await openBundle(folderSource(bundleUrl), precision);
  const pipe = await Pipeline.load(bundle, tables, LITERT_WASM);
  const run = async (text, options = {}) => {
    const result = await pipe.run(text, options.aggregation ?? 'simple');
    return pipe.task === 'ner' ? result.entities : result.labels.slice(0, options.topK ?? 1);
  };
  run.task = pipe.task;
  run.info = { recipe: bundle.artifact.recipe, threads: 1, wasm: 'single-threaded' };
  run.dispose = () => {};
  return run;
}
