// Our bundle through PocketBERT's web package: the page's runtime "pocketbert".
import { pocketbertPipeline } from './pocketbert.js';
import { start } from './harness.js';

start(async (spec) => {
  // LiteRT.js's files from the site's /litert/ folder (the package's own default needs its esbuild plugin)
  const run = await pocketbertPipeline(spec.model_url, { precision: spec.precision, threads: spec.threads,
    wasm: new URL('/litert/', location.href).href });
  return {
    info: { recipe: run.info.recipe, runtime: run.info.runtime },
    // the answer compared with the Python runtime's: top label, or entities (label, code-point span)
    answer: async (text) => (run.task === 'ner'
      ? (await run(text, { aggregation: 'simple' })).map((e) => [e.entity_group ?? e.entity, e.start, e.end])
      : (await run(text, { topK: 1 }))[0].label),
  };
});
