// An esbuild plugin for apps that bundle the package: esbuild does not follow `new URL(…, import.meta.url)`,
// so it copies LiteRT.js's WebAssembly files beside the bundle (OUTDIR/pocketbert-wasm/) and points the
// package's default there. The app's author copies nothing:
//
//   import { pocketbertWasm } from 'pocketbert/esbuild';
//   await esbuild.build({ entryPoints: ['app.js'], bundle: true, format: 'esm', outdir: 'dist',
//     plugins: [pocketbertWasm()] });
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WASM_FILES, packageWasmFolder } from './wasm-files.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const WASM_FOLDER_NAME = 'pocketbert-wasm';

/** options.folder: the folder's name inside the output folder (default pocketbert-wasm). */
export function pocketbertWasm({ folder = WASM_FOLDER_NAME } = {}) {
  return {
    name: 'pocketbert-wasm',
    setup(build) {
      const { outdir, outfile } = build.initialOptions;
      const out = outdir ?? (outfile ? dirname(outfile) : null);
      if (!out) throw new Error('pocketbert-wasm: give esbuild an outdir or outfile, beside which the files go');
      build.onLoad({ filter: /[\\/]src[\\/]wasm-location\.js$/ }, (args) => {
        if (resolve(dirname(args.path), '..') !== resolve(ROOT)) return undefined;
        return { loader: 'js', contents: `export function defaultWasmFolder() {
  return new URL('./${folder}/', import.meta.url).href;
}
` };
      });
      build.onEnd(() => {
        const from = packageWasmFolder(ROOT);
        if (!from) throw new Error('pocketbert-wasm: LiteRT.js\'s wasm files are missing: reinstall pocketbert');
        mkdirSync(join(out, folder), { recursive: true });
        for (const name of WASM_FILES) copyFileSync(join(from, name), join(out, folder, name));
      });
    },
  };
}
