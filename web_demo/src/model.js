// LiteRT.js: one compiled model, one signature per sequence bucket (seq_<length>), batch 1, inputs by name.
import { loadLiteRt, loadAndCompile, Tensor } from '@litertjs/core';

let runtime = null;

/** One line of LiteRT's C++ log, by the severity it starts with ("INFO: [file:line] …", litert_logging.h). */
export function liteRtLog(line) {
  const severity = /^(VERBOSE|INFO|WARNING|ERROR): /.exec(line)?.[1];
  if (severity === 'VERBOSE' || severity === 'INFO') console.debug(line);
  else if (severity === 'WARNING') console.warn(line);
  else console.error(line);
}

/** Load LiteRT's WebAssembly from `wasmFolder` (an absolute URL), once (single-threaded XNNPACK). */
export function loadRuntime(wasmFolder) {
  // LiteRT.js has no log-level option and its C++ log goes to Emscripten's stderr, console.error by default:
  // every model load printed a dozen INFO lines as errors. It hands self.Module to the WebAssembly module,
  // so Emscripten's own options apply: printErr routes the lines by severity, and locateFile finds the
  // .wasm beside its .js file from a worker too (whose default is the worker script's folder).
  if (!runtime) {
    self.Module = { printErr: liteRtLog, locateFile: (path) => new URL(path, wasmFolder).href };
    runtime = loadLiteRt(wasmFolder);
  }
  return runtime;
}

export class BucketedModel {
  static async load(bytes, wasmFolder) {
    await loadRuntime(wasmFolder);
    const compiled = await loadAndCompile(bytes, { accelerator: 'wasm' });
    return new BucketedModel(compiled);
  }

  constructor(compiled) {
    this.compiled = compiled;
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
    this.inputNames = this.runners.get(this.buckets[0]).getInputDetails().map((d) => d.name);
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
    for (const name of this.inputNames) {
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
}
