// Where LiteRT.js's WebAssembly files are by default: the package's own wasm/ folder, filled from the
// @litertjs/core dependency when the package is packed (tools/copy-wasm.mjs). Resolved when first needed, not
// on import, so that a classic worker script (where import.meta is empty) can import the package and pass
// its own folder. The pocketbert/esbuild plugin replaces this module in a bundle: the files are copied
// beside the bundle's output and this function points there.

/** The absolute URL of the folder holding litert_wasm_*.js and .wasm. */
export function defaultWasmFolder() {
  return new URL('../wasm/', import.meta.url).href;
}
