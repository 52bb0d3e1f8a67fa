// LiteRT's log routing, the WebAssembly build and thread choice of src/model.js: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { liteRtLog, threadsFor, wasmBuild } from '../src/model.js';

test('LiteRT\'s log lines go to the console by severity: only ERROR and unknown lines are errors', (t) => {
  const seen = [];
  for (const level of ['debug', 'warn', 'error']) t.mock.method(console, level, (line) => seen.push([level, line]));
  for (const line of ['INFO: [environment.cc:36] Creating LiteRT environment with options', 'VERBOSE: x',
    'INFO: Created TensorFlow Lite XNNPACK delegate for CPU.',
    'WARNING: [npu_registry.cc:34] NPU accelerator could not be loaded', 'ERROR: [compiled_model.cc:1] failed',
    'Aborted(): something', 'INFOrmation without the prefix']) liteRtLog(line);
  assert.deepEqual(seen.map(([level]) => level), ['debug', 'debug', 'debug', 'warn', 'error', 'error', 'error']);
});

test('the build LiteRT.js loads: threaded only when asked and relaxed SIMD is there, else compat without it', () => {
  assert.deepEqual(wasmBuild(true, true), { file: 'litert_wasm_threaded_internal.js', threaded: true, simd: 'relaxed-simd' });
  assert.equal(wasmBuild(true, false).file, 'litert_wasm_internal.js');
  assert.deepEqual(wasmBuild(false, true), { file: 'litert_wasm_compat_internal.js', threaded: false, simd: 'simd128' });
});

test('more than one thread only in a cross-origin isolated page; by default up to 4 there, 1 elsewhere', (t) => {
  assert.equal(threadsFor(null), 1);
  assert.equal(threadsFor(4), 1);
  globalThis.crossOriginIsolated = true;
  t.after(() => { delete globalThis.crossOriginIsolated; });
  assert.equal(threadsFor(3), 3);
  assert.equal(threadsFor(null), Math.min(4, globalThis.navigator?.hardwareConcurrency ?? 1));
  assert.throws(() => threadsFor(0), TypeError);
  assert.throws(() => threadsFor(1.5), TypeError);
});
