// LiteRT.js: one compiled model, one signature per sequence bucket (seq_<length>), batch 1, inputs by name.
import { loadAndCompile, loadLiteRt, supportsFeature, Tensor } from '@litertjs/core';
import { defaultWasmFolder } from './wasm-location.js';

/** The LiteRT.js WebAssembly build loaded in this page or worker (LiteRT.js holds one per global scope). */
let loaded = null; // {promise, runtime: {wasm, file, threaded, simd}}

/** One line of LiteRT's C++ log, by the severity it starts with ("INFO: [file:line] …", litert_logging.h). */
export function liteRtLog(line) {
  const severity = /^(VERBOSE|INFO|WARNING|ERROR): /.exec(line)?.[1];
  if (severity === 'VERBOSE' || severity === 'INFO') console.debug(line);
  else if (severity === 'WARNING') console.warn(line);
  else console.error(line);
}

/** Which build LiteRT.js loads from a folder (its own rule, @litertjs/core load.ts): the threaded one when
 * asked for and the browser has relaxed SIMD, else the plain relaxed-SIMD one, else the compatible one. */
export function wasmBuild(relaxedSimd, threaded) {
  if (!relaxedSimd) return { file: 'litert_wasm_compat_internal.js', threaded: false, simd: 'simd128' };
  return threaded ? { file: 'litert_wasm_threaded_internal.js', threaded: true, simd: 'relaxed-simd' }
    : { file: 'litert_wasm_internal.js', threaded: false, simd: 'relaxed-simd' };
}

/** Threads the caller may get here: more than one only in a cross-origin isolated page (SharedArrayBuffer). */
export function threadsFor(requested) {
  const isolated = globalThis.crossOriginIsolated === true;
  const cores = globalThis.navigator?.hardwareConcurrency ?? 1;
  const wanted = requested ?? (isolated ? Math.min(4, cores) : 1);
  if (!Number.isInteger(wanted) || wanted < 1) {
    throw new TypeError(`threads ${JSON.stringify(requested)} must be a whole number ≥ 1`);
  }
  return isolated ? wanted : 1;
}

/** Load LiteRT's WebAssembly from `wasm` (a folder URL; default: the package's own), once per global scope;
 * the threaded build when `threaded`. A scope that already loaded LiteRT keeps the build it loaded. */
export function loadRuntime(wasm = null, threaded = false) {
  if (!loaded) {
    const folder = new URL(wasm ?? defaultWasmFolder(), globalThis.location?.href).href;
    const folderSlash = folder.endsWith('/') ? folder : `${folder}/`;
    // LiteRT.js has no log-level option and its C++ log goes to Emscripten's stderr, console.error by default:
    // every model load printed a dozen INFO lines as errors. It hands self.Module to the WebAssembly module,
    // so Emscripten's own options apply: printErr routes the lines by severity, and locateFile finds the
    // .wasm beside its .js file from a worker too (whose default is the worker script's folder).
    self.Module = { printErr: liteRtLog, locateFile: (path) => new URL(path, folderSlash).href };
    const promise = (async () => {
      const build = wasmBuild(await supportsFeature('relaxedSimd'), threaded);
      try {
        await loadLiteRt(folderSlash, { threads: build.threaded });
      } catch (err) {
        loaded = null;
        throw new Error(`LiteRT.js's WebAssembly (${folderSlash}${build.file}) could not be loaded: ${err.message ?? err}. `
          + 'Fix: bundle the app with the pocketbert/esbuild plugin, serve node_modules/pocketbert/wasm/ and pass its URL '
          + 'as the pipeline\'s wasm option (docs/web.md)');
      }
      return { wasm: folderSlash, ...build };
    })();
    loaded = { promise };
  }
  return loaded.promise;
}

export class BucketedModel {
  /** bytes: the TFLite file; options: {wasm: LiteRT's folder URL, threads: XNNPACK threads (>1: threaded build)}. */
  static async load(bytes, { wasm = null, threads = 1 } = {}) {
    const runtime = await loadRuntime(wasm, threads > 1);
    const used = runtime.threaded ? threads : 1;
    const compiled = await loadAndCompile(bytes, { accelerator: 'wasm',
      ...(runtime.threaded ? { cpuOptions: { numThreads: used } } : {}) });
    return new BucketedModel(compiled, { ...runtime, threads: used });
  }

  constructor(compiled, runtime = null) {
    this.compiled = compiled;
    this.runtime = runtime;
    this.runners = new Map();
    for (const [name, runner] of Object.entries(compiled.signatures)) {
      const match = /^seq_(\d+)$/.exec(name);
      if (match) this.runners.set(Number(match[1]), runner);
    }
    if (!this.runners.size) {
      throw new Error(`the model has signatures ${Object.keys(compiled.signatures).join(', ')}; expected seq_<length>`);
    }
    this.buckets = [...this.runners.keys()].sort((a, b) => a - b);
    this.maxLength = this.buckets.at(-1);
    /** bucket -> the names of its signature's inputs */
    this.signatureInputs = new Map(this.buckets.map((b) => [b, this.runners.get(b).getInputDetails().map((d) => d.name)]));
  }

  /** The smallest bucket that holds `length` tokens. */
  bucketFor(length) {
    const bucket = this.buckets.find((b) => b >= length);
    if (bucket === undefined) throw new Error(`a row of ${length} tokens is longer than the largest bucket (${this.maxLength})`);
    return bucket;
  }

  /** One row (input_ids, attention_mask, token_type_ids) -> logits rows [tokens][labels] (or one row). */
  async run(row, task) {
    const n = row.input_ids.length;
    const bucket = this.bucketFor(n);
    const inputs = {};
    for (const name of this.signatureInputs.get(bucket)) {
      const data = new Int32Array(bucket); // padding: id 0, mask 0, type 0
      data.set(row[name]);
      inputs[name] = new Tensor(data, [1, bucket]);
    }
    let outputs;
    try {
      outputs = await this.runners.get(bucket).run(inputs);
    } finally {
      for (const tensor of Object.values(inputs)) tensor.delete();
    }
    const logits = outputs.logits;
    const flat = Float32Array.from(logits.toTypedArray());
    const shape = [...logits.type.layout.dimensions];
    for (const tensor of Object.values(outputs)) tensor.delete();
    const labels = shape.at(-1);
    if (task === 'classification') return Array.from(flat.subarray(0, labels));
    return Array.from({ length: n }, (_, i) => Array.from(flat.subarray(i * labels, (i + 1) * labels)));
  }

  /** Frees the compiled model (LiteRT's WebAssembly memory); the model cannot run afterwards. */
  delete() {
    this.compiled?.delete();
    this.compiled = null;
    this.runners.clear();
  }
}
