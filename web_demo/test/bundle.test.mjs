// Artifact choice and file checks of src/bundle.js: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { BundleError, chooseArtifact, inputLength, openBundle } from '../src/bundle.js';

const artifact = (precision, passed = true, file = `model.${precision}.tflite`) => ({ recipe: `tflite:${precision}`,
  backend: 'tflite', precision, file, verification: { passed } });

test('the Android app\'s choice: int8-dynamic, then fp16, then fp32; int8-static and unverified models are skipped', () => {
  const manifest = { artifacts: [artifact('fp32'), artifact('fp16'), artifact('int8-static'), artifact('int8-dynamic', false),
    { ...artifact('int8-dynamic'), backend: 'onnx' }] };
  assert.equal(chooseArtifact(manifest).precision, 'fp16');
  manifest.artifacts.push(artifact('int8-dynamic'));
  assert.equal(chooseArtifact(manifest).precision, 'int8-dynamic');
  assert.equal(chooseArtifact(manifest, 'fp32').precision, 'fp32');
  assert.throws(() => chooseArtifact(manifest, 'int8-static'), /no verified tflite:int8-static model/);
});

test('the phone-sized int4 file comes after int8 and before the float ones, as in the runtime and the Android app', () => {
  const manifest = { artifacts: [artifact('fp32'), artifact('fp16'), artifact('int4-dynamic')] };
  assert.equal(chooseArtifact(manifest).precision, 'int4-dynamic');
  manifest.artifacts.push(artifact('int8-dynamic'));
  assert.equal(chooseArtifact(manifest).precision, 'int8-dynamic');
});

test('the input length is the bundle\'s, as in every runtime: max_sequence_length or a TFLite artifact\'s largest bucket', () => {
  const tflite = { ...artifact('fp32'), details: { buckets: [32, 64] } };
  const onnx = { ...artifact('int8-dynamic'), backend: 'onnx', details: {} };
  assert.equal(inputLength({ max_sequence_length: 512, artifacts: [onnx, tflite] }), 64);
  assert.equal(inputLength({ max_sequence_length: 40, artifacts: [onnx, tflite] }), 40);
  assert.equal(inputLength({ max_sequence_length: 512, artifacts: [onnx, artifact('fp32')] }), 512);
});

test('a model name leading outside the bundle folder is refused', () => {
  for (const file of ['../evil.tflite', 'sub/model.tflite', '.hidden.tflite']) {
    assert.throws(() => chooseArtifact({ artifacts: [artifact('fp32', true, file)] }), BundleError);
  }
});

function source(files) {
  return { describe: () => 'test', read: async (name) => {
    if (!(name in files)) throw new BundleError(`no ${name}`, 'add it');
    return new TextEncoder().encode(files[name]);
  } };
}

function bundleFiles(changed = {}) {
  const files = { 'labels.txt': 'O\nB-PER\n', 'vocab.txt': '[PAD]\n[UNK]\n', 'model.fp32.tflite': 'model bytes' };
  const entries = Object.fromEntries(Object.entries(files).map(([name, text]) => [name,
    { bytes: Buffer.byteLength(text), sha256: createHash('sha256').update(text).digest('hex') }]));
  const manifest = { schema_version: 1, task: 'ner', labels: ['O', 'B-PER'], tokenizer: { vocab_file: 'vocab.txt' },
    artifacts: [artifact('fp32')], files: entries };
  return { ...files, ...changed, 'manifest.json': JSON.stringify({ ...manifest, ...changed.manifest }) };
}

test('every file is checked against the manifest\'s size and SHA-256', async () => {
  const ok = await openBundle(source(bundleFiles()));
  assert.equal(new TextDecoder().decode(ok.model), 'model bytes');
  assert.deepEqual(ok.labels, ['O', 'B-PER']);
  await assert.rejects(openBundle(source(bundleFiles({ 'model.fp32.tflite': 'model bytez' }))),
    /model.fp32.tflite does not match the manifest's size and SHA-256/);
  await assert.rejects(openBundle(source(bundleFiles({ 'labels.txt': 'O\nB-PER\nB-LOC\n' }))), /labels.txt does not match/);
});

test('schema versions: newer, missing or not an integer are refused before anything else', async () => {
  for (const [version, message] of [[2, /bundle schema 2 is newer than this page reads \(1\)/], ['1', /not a positive integer/],
    [undefined, /not a positive integer/], [1.5, /not a positive integer/], [true, /not a positive integer/]]) {
    await assert.rejects(openBundle(source(bundleFiles({ manifest: { schema_version: version, artifacts: [] } }))), message);
  }
});

test('a bundle cut for the web (python -m converter cut --target web) opens: one TFLite model, a cut record, nothing else', async () => {
  const cutRecord = { target: 'web', from_sha256: 'a'.repeat(64), dropped: ['onnx:fp32', 'tflite:fp32'] };
  const ok = await openBundle(source(bundleFiles({ manifest: { cut: cutRecord } })));
  assert.equal(ok.artifact.recipe, 'tflite:fp32');
  assert.deepEqual(ok.labels, ['O', 'B-PER']);
  // the models the cut dropped are neither listed nor present: asking for one names what is there
  await assert.rejects(openBundle(source(bundleFiles({ manifest: { cut: cutRecord } })), 'int8-dynamic'),
    /no verified tflite:int8-dynamic model \(it has: fp32\)/);
});
