// Node-side helpers (the pack script and the esbuild plugin): which LiteRT.js files the package ships and
// where the @litertjs/core dependency keeps them. Not imported by the browser code.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The builds the pipeline may load: threaded, relaxed SIMD, and the compatible one (no JSPI build). */
export const WASM_FILES = ['litert_wasm_internal', 'litert_wasm_compat_internal', 'litert_wasm_threaded_internal']
  .flatMap((name) => [`${name}.js`, `${name}.wasm`]);

const complete = (folder) => WASM_FILES.every((name) => existsSync(join(folder, name)));

/** @litertjs/core's wasm folder as Node would resolve the package from `from` (node_modules upwards). */
export function litertWasmFolder(from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const folder = join(dir, 'node_modules', '@litertjs', 'core', 'wasm');
    if (complete(folder)) return folder;
    if (dirname(dir) === dir) return null;
  }
}

/** The package's wasm/ folder if it is filled (a packed or installed package), else @litertjs/core's. */
export function packageWasmFolder(packageRoot) {
  const own = join(packageRoot, 'wasm');
  return complete(own) ? own : litertWasmFolder(packageRoot);
}
