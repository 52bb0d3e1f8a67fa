// Copies LiteRT.js's WebAssembly builds from the @litertjs/core dependency into the package's wasm/ folder
// (run by npm before packing and after installing the package's own dependencies), so that the package finds
// them from itself: the app's user copies nothing.
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WASM_FILES, litertWasmFolder } from '../src/wasm-files.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const from = litertWasmFolder(join(HERE, '..'));
if (!from) {
  console.error('@litertjs/core is not installed beside the package: run npm ci in web/ first');
  process.exit(2);
}
const to = join(HERE, '..', 'wasm');
mkdirSync(to, { recursive: true });
for (const name of WASM_FILES) copyFileSync(join(from, name), join(to, name));
console.error(`copied ${WASM_FILES.length} LiteRT.js files from ${from} into ${to}`);
