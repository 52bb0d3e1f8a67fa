// Artifact choice, manifest schema and file checks of src/bundle.js: node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { BundleError, checkModelAgreement, chooseArtifact, inputLength, openBundle } from '../src/bundle.js';

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
  const manifest = { schema_version: 1, task: 'ner', labels: ['O', 'B-PER'], max_sequence_length: 128,
    inputs: [{ name: 'input_ids' }, { name: 'attention_mask' }, { name: 'token_type_ids' }],
    tokenizer: { vocab_file: 'vocab.txt', vocab_size: 2 }, artifacts: [artifact('fp32')], files: entries };
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
  for (const [version, message] of [[2, /bundle schema 2 is newer than this package reads \(1\): the bundle comes from a newer converter/], ['1', /not a positive integer/],
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

const sha = (text) => createHash('sha256').update(text).digest('hex');

test('a bundle from a newer converter says to upgrade the package', async () => {
  const err = await openBundle(source(bundleFiles({ manifest: { schema_version: 2 } }))).catch((e) => e);
  assert.ok(err instanceof BundleError);
  assert.match(err.fix, /npm install pocketbert@latest/);
});

test('the manifest\'s fields are checked as the Python runtime checks them, naming the field', async () => {
  for (const [changed, field] of [[{ task: 'qa' }, /'task' must be one of ner, classification, not "qa"/],
    [{ labels: [] }, /'labels' must be a non-empty list/], [{ max_sequence_length: 1 }, /'max_sequence_length'/],
    [{ inputs: [{ name: 'pixels' }] }, /'inputs' must be a list of model inputs named input_ids/],
    [{ tokenizer: { vocab_size: -1 } }, /'tokenizer.vocab_size' must be a positive integer/],
    [{ artifacts: [{ ...artifact('fp32'), details: { buckets: [] } }] }, /'artifacts.0.details.buckets'/],
    [{ files: { 'labels.txt': { bytes: 3, sha256: 'abc' } } }, /'files' must be an object mapping/]]) {
    const err = await openBundle(source(bundleFiles({ manifest: changed }))).catch((e) => e);
    assert.ok(err instanceof BundleError, String(err));
    assert.match(err.problem, field);
    assert.match(err.fix, /copy the bundle again/);
  }
});

test('a missing file is named, with how to provide it', async () => {
  const files = bundleFiles();
  delete files['vocab.txt'];
  await assert.rejects(openBundle(source(files)), /no vocab.txt/);
  const manifest = JSON.parse(bundleFiles()['manifest.json']);
  delete manifest.files['vocab.txt'];
  await assert.rejects(openBundle(source({ ...bundleFiles(), 'manifest.json': JSON.stringify(manifest) })),
    /manifest.json does not list vocab.txt/);
});

test('the pin: the manifest\'s SHA-256 must be the expected one, checked before anything is read', async () => {
  const files = bundleFiles();
  const pin = sha(files['manifest.json']);
  assert.equal((await openBundle(source(files), null, pin)).pin, pin);
  assert.equal((await openBundle(source(files), null, `sha256:${pin.toUpperCase()}`)).pin, pin);
  const read = [];
  const counting = { describe: () => 'b/', read: async (name) => { read.push(name); return source(files).read(name); } };
  await assert.rejects(openBundle(counting, null, 'f'.repeat(64)), /has SHA-256 [0-9a-f]{64}, not the pinned f{64}/);
  assert.deepEqual(read, ['manifest.json']);
  await assert.rejects(openBundle(source(files), null, 'not-a-pin'), TypeError);
});

test('a manifest whose labels or vocabulary size disagree with its files is refused, hashes or not', async () => {
  // labels.txt listed with its true hash, but the manifest's labels reversed: every answer would be mislabelled
  await assert.rejects(openBundle(source(bundleFiles({ manifest: { labels: ['B-PER', 'O'] } }))),
    /'labels' \["B-PER","O"\] disagree with labels.txt \["O","B-PER"\]/);
  await assert.rejects(openBundle(source(bundleFiles({ manifest: { tokenizer: { vocab_file: 'vocab.txt', vocab_size: 3 } } }))),
    /'tokenizer.vocab_size' is 3 but vocab.txt holds 2 tokens/);
  const ok = await openBundle(source(bundleFiles({ manifest: { tokenizer: { vocab_file: 'vocab.txt' } } })));
  assert.equal(ok.vocab.length, 2); // no vocab_size: nothing to compare
});

test('the manifest must agree with itself as the Python runtime requires (runtime/contract.py check_consistency)', async () => {
  const tflite = (details) => ({ ...artifact('fp32'), details });
  for (const [changed, problem] of [
    [{ model_vocab_size: 1 }, /'tokenizer.vocab_size' 2 is larger than the model's word table \('model_vocab_size' 1\)/],
    [{ tokenizer: { vocab_size: 2, special_tokens: { unk: { token: '[UNK]', id: 5 } } } },
      /'tokenizer.special_tokens.unk' has id 5, outside the 2-token vocabulary/],
    [{ tokenizer: { vocab_size: 2, max_sequence_length: 512 } }, /'max_sequence_length' is 128 but 'tokenizer.max_sequence_length' is 512/],
    [{ tokenizer: { vocab_size: 2, special_tokens: { unk: { token: '[UNK]', id: 0 } } } },
      /'tokenizer.special_tokens.unk' is "\[UNK\]" with id 0, but line 1 of vocab.txt is "\[PAD\]"/],
    [{ verification: { max_length: 128 }, artifacts: [tflite({ buckets: [32, 64] })] },
      /input length is 64 .* verified at 128 tokens/],
    [{ inputs: [{ name: 'input_ids' }, { name: 'input_ids' }, { name: 'attention_mask' }] }, /must name input_ids and attention_mask, each once/],
    [{ outputs: [{ name: 'logits', shape: ['batch', 'sequence', 3] }] }, /the 'logits' output has 3 columns but 'labels' has 2 names/],
    [{ artifacts: [tflite({ buckets: [32], signatures: ['seq_32', 'seq_64'] })] }, /do not name its buckets \[32\]/],
    [{ artifacts: [tflite({ metadata: { labels: ['B-PER', 'O'] } })] }, /metadata labels \["B-PER","O"\] disagree/],
    [{ artifacts: [tflite({ metadata: { vocab_size: 3 } })] }, /metadata vocab_size 3 disagrees with 'tokenizer.vocab_size' 2/]]) {
    const err = await openBundle(source(bundleFiles({ manifest: changed }))).catch((e) => e);
    assert.ok(err instanceof BundleError, `${JSON.stringify(changed)}: ${err}`);
    assert.match(err.problem, problem);
    assert.match(err.fix, /copy the bundle again from its source .* convert the model again so that the converter writes both/);
  }
  const same = { verification: { max_length: 64 }, outputs: [{ name: 'logits', shape: ['batch', 2] }],
    artifacts: [tflite({ buckets: [32, 64], signatures: ['seq_32', 'seq_64'], metadata: { labels: ['O', 'B-PER'], vocab_size: 2 } })] };
  assert.equal((await openBundle(source(bundleFiles({ manifest: same })))).artifact.file, 'model.fp32.tflite');
});

test('the model file must have the listed buckets and take the manifest\'s inputs', () => {
  const inputs = ['input_ids', 'attention_mask', 'token_type_ids'];
  const manifest = { inputs: inputs.map((name) => ({ name })) };
  const model = (buckets, names = inputs) => ({ buckets, signatureInputs: new Map(buckets.map((b) => [b, names])) });
  const entry = { file: 'model.tflite', details: { buckets: [64, 32] } };
  checkModelAgreement(manifest, entry, model([32, 64]));
  checkModelAgreement(manifest, { file: 'model.tflite', details: {} }, model([128])); // none listed
  assert.throws(() => checkModelAgreement(manifest, entry, model([32, 64, 128])),
    /model.tflite has buckets 32, 64, 128 but the manifest lists 32, 64/);
  assert.throws(() => checkModelAgreement(manifest, entry, model([32, 64], ['input_ids', 'attention_mask'])),
    /signature seq_32 takes input_ids, attention_mask but the manifest's inputs are/);
  assert.throws(() => checkModelAgreement({ inputs: [{ name: 'input_ids' }] }, entry, model([32, 64])), BundleError);
});
