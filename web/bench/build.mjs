// Builds the benchmark's pages into a folder: one page per runtime (pocketbert, transformers.js, MediaPipe),
// each with only its own script, and every runtime's WebAssembly served from the same folder (nothing from a
// CDN). pocketbert-bench web-peers then adds the models and serves it.
//
//   node build.mjs OUT_DIR [--web-src DIR]
//
// --web-src: the PocketBERT web sources the page imports as `pocketbert-web-src/…` (default: ../src, this
// checkout's package), e.g. another version's, to benchmark it.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const MODULES = join(HERE, 'node_modules');
const RUNTIMES = ['ours', 'transformers', 'mediapipe'];
// where each runtime looks for its WebAssembly, and which files it may load from there
const WASM = {
  litert: [join(MODULES, '@litertjs', 'core', 'wasm'), /\.(js|wasm)$/],
  ort: [join(MODULES, 'onnxruntime-web', 'dist'), /^ort-wasm-simd-threaded.*\.(mjs|wasm)$/],
  mediapipe: [join(MODULES, '@mediapipe', 'tasks-text', 'wasm'), /\.(js|wasm)$/],
};

const [out, flag, webSrc = join(HERE, '..', 'src')] = process.argv.slice(2);
if (!out || (flag !== undefined && flag !== '--web-src')) {
  console.error('usage: node build.mjs OUT_DIR [--web-src DIR]');
  process.exit(2);
}
for (const runtime of RUNTIMES) {
  // --web-src's modules import @litertjs/core: resolved from this folder's packages when theirs has none
  await build({ entryPoints: [join(HERE, 'src', `${runtime}.js`)], bundle: true, format: 'esm', target: 'es2022',
    outfile: join(out, `${runtime}.js`), nodePaths: [MODULES], alias: { 'pocketbert-web-src': webSrc }, logLevel: 'warning' });
  writeFileSync(join(out, `${runtime}.html`), `<!doctype html><meta charset="utf-8"><title>${runtime}</title>`
    + `<script type="module" src="${runtime}.js"></script>\n`);
}
for (const [folder, [from, pattern]] of Object.entries(WASM)) {
  mkdirSync(join(out, folder), { recursive: true });
  for (const name of readdirSync(from).filter((n) => pattern.test(n))) copyFileSync(join(from, name), join(out, folder, name));
}
console.log(`built ${out}`);
