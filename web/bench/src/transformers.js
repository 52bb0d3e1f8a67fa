// transformers.js (ONNX Runtime Web) on the same model's ONNX file, laid out as a local model folder.
import { env, pipeline } from '@huggingface/transformers';
import { start } from './harness.js';

start(async (spec) => {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = '/models/';
  env.useBrowserCache = false; // every page is cold: no Cache Storage between runs either
  env.useWasmCache = false;
  env.backends.onnx.wasm.wasmPaths = new URL('/ort/', location.href).href; // served locally, never a CDN
  env.backends.onnx.wasm.numThreads = spec.threads;
  const task = spec.task === 'ner' ? 'token-classification' : 'text-classification';
  const run = await pipeline(task, spec.model_name, { dtype: spec.precision, device: 'wasm' });
  return {
    info: { dtype: spec.precision, threads: env.backends.onnx.wasm.numThreads, isolated: self.crossOriginIsolated },
    // NER: per-token labels (transformers.js 4.x gives no character offsets), [[token index, label], ...]
    answer: async (text) => (spec.task === 'ner'
      ? (await run(text)).map((t) => [t.index, t.entity])
      : (await run(text, { top_k: 1 }))[0].label),
  };
});
