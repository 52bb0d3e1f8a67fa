// The declarations describe exactly what the package exports: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const declared = (file) => [...new Set([...readFileSync(new URL(`../types/${file}`, import.meta.url), 'utf8')
  .matchAll(/^export (?:declare )?(?:function|class|const) (\w+)/gm)].map((m) => m[1]))].sort();

test('types/index.d.ts and types/esbuild.d.ts declare every export, and nothing else', async () => {
  assert.deepEqual(declared('index.d.ts'), Object.keys(await import('../src/index.js')).sort());
  assert.deepEqual(declared('esbuild.d.ts'), Object.keys(await import('../src/esbuild.js')).sort());
});

test('package.json\'s exports point at the files that exist', async () => {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  for (const entry of ['.', './esbuild']) {
    for (const file of Object.values(manifest.exports[entry])) readFileSync(new URL(`../${file}`, import.meta.url));
  }
});
