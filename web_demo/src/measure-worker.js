// The Measure panel's timed runs, in a Web Worker so that the page stays responsive (on the main thread a
// measurement froze it: LiteRT's runs never yield to the event loop). The worker compiles its own copy of
// the model. A classic worker, built as a script: LiteRT.js loads its WebAssembly with importScripts.
//
// In:  {model: Uint8Array, wasm: absolute URL of LiteRT's folder, task, warmup, runs, vocabSize, clsId, sepId}
// Out: {type: 'ready', buckets} | {type: 'progress', bucket, done, total} | {type: 'bucket', bucket, timing}
//      | {type: 'done'} | {type: 'error', message}
import { BucketedModel } from 'pocketbert';
import { syntheticRow, timeRuns } from './measure.js';

self.onmessage = async ({ data }) => {
  try {
    const model = await BucketedModel.load(data.model, { wasm: data.wasm, threads: 1 });
    data.model = null; // compiled: LiteRT holds its own copy
    self.postMessage({ type: 'ready', buckets: model.buckets });
    for (const bucket of model.buckets) {
      const input = syntheticRow(bucket, data.vocabSize, data.clsId, data.sepId);
      const timing = await timeRuns(() => model.run(input, data.task), data.warmup, data.runs,
        (done, total) => self.postMessage({ type: 'progress', bucket, done, total }));
      self.postMessage({ type: 'bucket', bucket, timing });
    }
    self.postMessage({ type: 'done' });
  } catch (err) {
    self.postMessage({ type: 'error', message: String(err?.message ?? err) });
  }
};
