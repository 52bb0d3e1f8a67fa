// Builds the page into a folder that any static server can serve, offline: the bundled script (the page and
// the pocketbert package, ../web) and the measurement's worker script, LiteRT's WebAssembly (copied by the
// package's esbuild plugin into pocketbert-wasm/) and, optionally, converter bundles.
//
//   node build.mjs [--out DIR] [--ner BUNDLE_DIR] [--classification BUNDLE_DIR]
//
// A bundle is copied into DIR/bundles/<task>/: manifest.json, labels.txt, vocab.txt and its TFLite models
// (the page checks every file against the manifest before using it).
import { build } from 'esbuild';
import { copyFileSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pocketbertWasm } from 'pocketbert/esbuild';

const HERE = dirname(fileURLToPath(import.meta.url));

function options(argv) {
  const out = { out: join(HERE, 'dist') };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!['out', 'ner', 'classification'].includes(key) || argv[i + 1] === undefined) {
      console.error(`usage: node build.mjs [--out DIR] [--ner BUNDLE_DIR] [--classification BUNDLE_DIR] (got ${argv[i]})`);
      process.exit(2);
    }
    out[key] = resolve(argv[i + 1]);
  }
  return out;
}

function place(from, to) { // a hard link costs no space for large models; a copy where links cannot be made
  rmSync(to, { force: true });
  try { linkSync(from, to); } catch { copyFileSync(from, to); }
}

function copyBundle(bundle, task, out) {
  const manifestPath = join(bundle, 'manifest.json');
  if (!existsSync(manifestPath)) {
    console.error(`${bundle} has no manifest.json: pass a bundle folder written by python -m converter`);
    process.exit(3);
  }
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  if (manifest.task !== task) {
    console.error(`${bundle} is a ${manifest.task} bundle, not ${task}`);
    process.exit(3);
  }
  const models = manifest.artifacts.filter((a) => a.backend === 'tflite').map((a) => a.file);
  if (!models.length) {
    console.error(`${bundle} has no TFLite model: convert with --format tflite`);
    process.exit(3);
  }
  const target = join(out, 'bundles', task);
  rmSync(target, { recursive: true, force: true });
  mkdirSync(target, { recursive: true });
  for (const name of ['manifest.json', 'labels.txt', manifest.tokenizer?.vocab_file ?? 'vocab.txt', ...models]) {
    if (name.includes('/') || name.includes('\\') || name.startsWith('.')) {
      console.error(`${bundle}: ${name} is not a plain file name in the bundle`);
      process.exit(3);
    }
    place(join(bundle, name), join(target, name));
  }
}

const opts = options(process.argv.slice(2));
mkdirSync(opts.out, { recursive: true });
await build({ entryPoints: [join(HERE, 'src', 'main.js')], bundle: true, format: 'esm', target: 'es2022',
  outfile: join(opts.out, 'app.js'), logLevel: 'warning', plugins: [pocketbertWasm()] });
// a classic worker script: LiteRT.js loads its WebAssembly with importScripts, which module workers lack; the
// page passes it the folder its own pipeline loaded LiteRT from, so the package's default (which reads
// import.meta, empty in a classic script) is never used there
await build({ entryPoints: [join(HERE, 'src', 'measure-worker.js')], bundle: true, format: 'iife', target: 'es2022',
  outfile: join(opts.out, 'measure-worker.js'), logLevel: 'warning', logOverride: { 'empty-import-meta': 'silent' } });
for (const name of ['index.html', 'boot.js', 'style.css']) copyFileSync(join(HERE, name), join(opts.out, name));
for (const task of ['ner', 'classification']) if (opts[task]) copyBundle(opts[task], task, opts.out);
console.log(`built ${opts.out}`);
