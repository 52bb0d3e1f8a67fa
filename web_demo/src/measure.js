// The "measure" panel's arithmetic: latency per bucket as a record of the benchmarks' results schema
// (benchmarks/schema.py, "pocketbert-bench/1"), so `python -m benchmarks report` shows it.

export const SCHEMA = 'pocketbert-bench/1';

/** numpy.percentile's default (linear interpolation between closest ranks). */
export function percentile(sorted, q) {
  const pos = (sorted.length - 1) * (q / 100);
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** benchmarks.schema.summarize: mean, p50/p90/p99, population std, extremes. */
export function summarize(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const std = Math.sqrt(times.reduce((a, t) => a + (t - mean) ** 2, 0) / times.length);
  return { runs: times.length, mean_ms: mean, p50_ms: percentile(sorted, 50), p90_ms: percentile(sorted, 90),
    p99_ms: percentile(sorted, 99), std_ms: std, min_ms: sorted[0], max_ms: sorted.at(-1) };
}

/** A row of exactly `length` tokens: [CLS], random ids of the vocabulary's upper part, [SEP] (as benchmarks' inputs). */
export function syntheticRow(length, vocabSize, clsId, sepId, seed = length) {
  let state = seed >>> 0 || 1;
  const next = () => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state / 2 ** 32; };
  const low = Math.min(1000, Math.floor(vocabSize / 2));
  const ids = Array.from({ length }, () => low + Math.floor(next() * (vocabSize - low)));
  ids[0] = clsId;
  ids[length - 1] = sepId;
  return { input_ids: ids, attention_mask: new Array(length).fill(1), token_type_ids: new Array(length).fill(0) };
}

/** Times `runOnce` (a promise-returning function): `warmup` untimed runs, then `runs` timed ones;
 * `progress(done, total)` after each. */
export async function timeRuns(runOnce, warmup, runs, progress = () => {}) {
  const warm = [];
  for (let i = 0; i < warmup; i++) {
    const t0 = performance.now();
    await runOnce();
    warm.push(performance.now() - t0);
    progress(i + 1, warmup + runs);
  }
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await runOnce();
    times.push(performance.now() - t0);
    progress(warmup + i + 1, warmup + runs);
  }
  return { warmup: { runs: warmup, mean_ms: warm.length ? warm.reduce((a, b) => a + b, 0) / warm.length : null },
    timed: summarize(times) };
}

/** What the page knows of the machine it runs on. */
export function browserDevice() {
  return { kind: 'browser', user_agent: navigator.userAgent, hardware_concurrency: navigator.hardwareConcurrency ?? null,
    platform: navigator.userAgentData?.platform ?? navigator.platform ?? null,
    runtime: 'LiteRT.js (@litertjs/core), WebAssembly CPU (XNNPACK), 1 thread' };
}

/** One latency record per bucket, in the schema's record format. */
export function latencyRecord({ bundle, bucket, timing, initMs, firstMs }) {
  const { manifest, artifact, model } = bundle;
  return {
    model: `${manifest.source?.builtin ?? manifest.architecture ?? 'bundle'}`,
    model_label: `${manifest.source?.builtin ?? manifest.architecture ?? 'bundle'} (${manifest.task})`,
    random_weights: false, bundle: bundle.where, variant: 'bundle', runner: artifact.recipe,
    opts: (manifest.opts ?? []).filter((o) => o !== 'int8').join(','), backend: 'tflite',
    precision: artifact.precision, threads: 1, seq_len: bucket, batch: 1, where: 'browser',
    init_ms: initMs ?? null, first_ms: firstMs ?? null, warmup: timing.warmup, timed: timing.timed,
    peak_rss_mb: null, size_bytes: model.length, macs: null, floor: null, skipped: null,
    notes: ['measured in a web page: LiteRT.js, WebAssembly, single-threaded, in a Web Worker, model time only '
      + '(tokenization excluded)'],
  };
}

/** The results file `python -m benchmarks report` reads (command "browser"). */
export function resultsFile(records) {
  return { schema: SCHEMA, command: 'browser', created: new Date().toISOString().replace(/\.\d+Z$/, '+00:00'),
    fast: false, machine: null, device: browserDevice(), settings: null, results: records };
}
