// A converter bundle read in the browser: manifest (schema 1, the Python runtime's rules:
// pocketbert/runtime/contract.py), the TFLite artifact to run, and every file checked against the manifest's
// size and SHA-256 (Web Crypto) before it is used; the manifest must agree with the files it lists.
// docs/manifest.md.

export const SCHEMA_VERSION = 1;
export const TASKS = ['ner', 'classification'];
export const INPUT_NAMES = ['input_ids', 'attention_mask', 'token_type_ids'];
const MAX_SEQUENCE_LENGTH = 8192;
const REBUILD = 'convert the model again with the pocketbert version this package belongs to';
const DAMAGED = `copy the bundle again (the manifest is damaged or was edited), or ${REBUILD}`;
// the Python runtime's fix for a manifest that disagrees with its files (runtime/contract.py DISAGREE)
const DISAGREE = 'copy the bundle again from its source (its manifest.json or one of its files was edited); if the '
  + 'change was meant, convert the model again so that the converter writes both';

/** A problem the user can act on: what is wrong (`problem`) and how to fix it (`fix`); never shown as markup. */
export class BundleError extends Error {
  constructor(problem, fix) {
    super(`${problem} (${fix})`);
    this.name = 'BundleError';
    this.problem = problem;
    this.fix = fix;
  }
}

const here = () => globalThis.location?.href;

/** Files served from `base` (a folder URL; a missing final "/" is added), fetched with `fetch`;
 * `fix`: the advice when a file is missing. */
export function folderSource(base, fix = null) {
  const folder = String(base).endsWith('/') ? String(base) : `${base}/`;
  return {
    describe: () => folder,
    async read(name) {
      const url = new URL(name, new URL(folder, here()));
      let response;
      try {
        response = await fetch(url);
      } catch (err) {
        throw new BundleError(`${folder}${name} could not be fetched (${err.message})`,
          'serve the bundle folder from the page\'s own origin (or one that allows it by CORS) over http(s)');
      }
      if (!response.ok) throw new BundleError(`${folder}${name} could not be loaded (HTTP ${response.status})`,
        fix ?? 'serve the whole bundle folder at that URL: manifest.json and every file it lists (a bundle cut '
          + 'for the web: pocketbert-convert cut BUNDLE --target web --out DIR)');
      return new Uint8Array(await response.arrayBuffer());
    },
  };
}

/** Files the user dropped or picked: a list of File objects (folder structure ignored). */
export function filesSource(files) {
  const byName = new Map([...files].map((f) => [f.name, f]));
  return {
    describe: () => `${byName.size} dropped file(s)`,
    async read(name) {
      const file = byName.get(name);
      if (!file) throw new BundleError(`the dropped files have no ${name}`, 'drop the whole bundle folder');
      return new Uint8Array(await file.arrayBuffer());
    },
  };
}

/** Lower is preferred: int8-dynamic, other int8, int4, fp16, fp32 (the Android app's and the runtime's order). */
export function precisionRank(precision) {
  if (precision === 'int8-dynamic') return 0;
  if (precision.startsWith('int8')) return 1;
  if (precision.startsWith('int4')) return 2;
  return { fp16: 3, fp32: 4 }[precision] ?? 5;
}

const isInt = (v) => typeof v === 'number' && Number.isInteger(v);
const isPositiveInt = (v) => isInt(v) && v > 0;
const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const shown = (v) => (v === undefined ? 'missing' : JSON.stringify(v));

/** The schema version first (a newer schema may have renamed anything), then the fields readers rely on. */
export function checkManifest(m) {
  if (!isObject(m)) throw new BundleError('manifest.json is not a JSON object', DAMAGED);
  if (!isPositiveInt(m.schema_version)) {
    throw new BundleError(`manifest.json has schema_version ${shown(m.schema_version)}, not a positive integer`, DAMAGED);
  }
  if (m.schema_version > SCHEMA_VERSION) {
    throw new BundleError(`bundle schema ${m.schema_version} is newer than this package reads (${SCHEMA_VERSION}): `
      + 'the bundle comes from a newer converter', 'upgrade the package (npm install pocketbert@latest), or convert '
      + 'with the pocketbert version that matches this package');
  }
  const need = (ok, field, rule) => {
    if (!ok) throw new BundleError(`manifest.json: '${field}' must be ${rule}, not ${shown(field.split('.').reduce((o, k) => o?.[k], m))}`, DAMAGED);
  };
  need(TASKS.includes(m.task), 'task', `one of ${TASKS.join(', ')}`);
  need(Array.isArray(m.labels) && m.labels.length > 0 && m.labels.every((l) => typeof l === 'string'), 'labels',
    'a non-empty list of strings');
  need(isInt(m.max_sequence_length) && m.max_sequence_length >= 2 && m.max_sequence_length <= MAX_SEQUENCE_LENGTH,
    'max_sequence_length', `an integer from 2 to ${MAX_SEQUENCE_LENGTH}`);
  need(Array.isArray(m.inputs) && m.inputs.length > 0 && m.inputs.every((i) => INPUT_NAMES.includes(i?.name)),
    'inputs', `a list of model inputs named ${INPUT_NAMES.join(', ')}`);
  need(isObject(m.tokenizer), 'tokenizer', 'an object of tokenizer settings');
  need(m.tokenizer.vocab_size == null || isPositiveInt(m.tokenizer.vocab_size), 'tokenizer.vocab_size',
    'a positive integer');
  need(m.tokenizer.special_tokens == null || isObject(m.tokenizer.special_tokens), 'tokenizer.special_tokens',
    'an object');
  need(Array.isArray(m.artifacts) && m.artifacts.length > 0 && m.artifacts.every((a) => isObject(a)
    && ['recipe', 'backend', 'precision', 'file'].every((k) => typeof a[k] === 'string')), 'artifacts',
  'a non-empty list of objects with recipe, backend, precision and file');
  m.artifacts.forEach((a, i) => {
    const buckets = a.details?.buckets;
    need(a.backend !== 'tflite' || buckets == null || (Array.isArray(buckets) && buckets.length > 0
      && buckets.every((b) => isInt(b) && b >= 1 && b <= MAX_SEQUENCE_LENGTH)), `artifacts.${i}.details.buckets`,
    `a non-empty list of integers from 1 to ${MAX_SEQUENCE_LENGTH}`);
  });
  need(isObject(m.files) && Object.values(m.files).every((f) => isObject(f) && isInt(f.bytes) && f.bytes >= 0
    && typeof f.sha256 === 'string' && /^[0-9a-f]{64}$/.test(f.sha256)), 'files',
  'an object mapping file names to {bytes, sha256}');
}

/** The verified TFLite artifact to run: `precision` if given, else the Android app's choice. */
export function chooseArtifact(manifest, precision = null) {
  const usable = manifest.artifacts.filter((a) => a.backend === 'tflite' && a.verification?.passed
    && a.precision !== 'int8-static'); // LiteRT.js does not expose the int8 logits' scale and zero point
  const candidates = usable.filter((a) => !precision || a.precision === precision);
  if (!candidates.length) {
    const have = usable.map((a) => a.precision).join(', ') || 'none';
    throw new BundleError(precision ? `the bundle has no verified tflite:${precision} model (it has: ${have})`
      : 'the bundle has no TFLite model the page can run',
    precision ? 'pick one of those precisions' : 'convert with --format tflite (the default tflite,onnx)');
  }
  const artifact = candidates.sort((a, b) => precisionRank(a.precision) - precisionRank(b.precision))[0];
  if (typeof artifact.file !== 'string' || !/^[^/\\]+$/.test(artifact.file) || artifact.file.startsWith('.')) {
    throw new BundleError(`artifacts' file ${JSON.stringify(artifact.file)} is not a plain file name in the bundle`,
      'use the bundle as the converter wrote it');
  }
  return artifact;
}

/** The longest row fed to the model, the same in every runtime (runtime/contract.py bundle_input_length):
 * max_sequence_length, or the largest bucket of any TFLite artifact when smaller. */
export function inputLength(manifest) {
  const largest = manifest.artifacts.filter((a) => a.backend === 'tflite' && a.details?.buckets?.length)
    .map((a) => Math.max(...a.details.buckets));
  return Math.min(manifest.max_sequence_length ?? Infinity, ...largest);
}

export async function sha256(bytes) {
  if (!globalThis.crypto?.subtle) {
    throw new BundleError('the browser offers no SHA-256 here: the page is not in a secure context',
      'open it through http://localhost (on a phone: adb reverse tcp:8000 tcp:8000) or https');
  }
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** Bytes of `name`, refused unless their size and SHA-256 are the manifest's. */
export async function verifiedFile(source, manifest, name) {
  const entry = manifest.files[name];
  if (!entry) throw new BundleError(`manifest.json does not list ${name}: a file the runtime would read unchecked`, DAMAGED);
  const bytes = await source.read(name);
  if (bytes.length !== entry.bytes || (await sha256(bytes)) !== entry.sha256) {
    throw new BundleError(`${name} does not match the manifest's size and SHA-256: the file is damaged or was changed`,
      'copy the bundle again from the converter\'s output');
  }
  return bytes;
}

const textLines = (bytes) => {
  const lines = new TextDecoder('utf-8', { fatal: true }).decode(bytes).split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
};

/** `expectedSha256` written as the converter prints it: 64 hexadecimal digits, optionally after "sha256:". */
export function parsePin(expectedSha256) {
  if (expectedSha256 == null) return null;
  const match = /^(?:sha256:)?([0-9a-fA-F]{64})$/.exec(String(expectedSha256).trim());
  if (!match) {
    throw new TypeError(`expectedSha256 ${JSON.stringify(expectedSha256)} is not a SHA-256: pass the 64 hexadecimal `
      + 'digits the converter printed as the bundle\'s pin');
  }
  return match[1].toLowerCase();
}

const refuse = (problem) => { throw new BundleError(`manifest.json: ${problem}`, DISAGREE); };
const need = (ok, problem) => ok || refuse(problem);

/** A manifest against itself and the files it lists, pin or no pin: the Python runtime's rules
 * (runtime/contract.py check_consistency; docs/manifest.md, "Consistency"). A hash proves a file is the one
 * listed, not that the manifest tells the truth about it: labels reversed in the manifest alone would swap
 * every answer. */
export function checkConsistency(m, labels, vocab, vocabFile) {
  need(JSON.stringify(labels) === JSON.stringify(m.labels), `'labels' ${shown(m.labels)} disagree with labels.txt `
    + `${shown(labels)}: every answer would carry another label's name`);
  const size = m.tokenizer.vocab_size;
  need(size == null || vocab.length === size, `'tokenizer.vocab_size' is ${size} but ${vocabFile} holds ${vocab.length} tokens`);
  need(size == null || !isInt(m.model_vocab_size) || size <= m.model_vocab_size, `'tokenizer.vocab_size' ${size} is `
    + `larger than the model's word table ('model_vocab_size' ${m.model_vocab_size}): its last ids would be out of range`);
  for (const [name, token] of Object.entries(m.tokenizer.special_tokens ?? {})) {
    need(size == null || !(token?.id >= size), `'tokenizer.special_tokens.${name}' has id ${token?.id}, outside the `
      + `${size}-token vocabulary`);
  }
  // the page tokenizes from vocab.txt with the manifest's ids: each must name its token's line (a token the
  // vocabulary lacks is never emitted)
  const known = new Set(vocab);
  for (const [name, token] of Object.entries(m.tokenizer.special_tokens ?? {})) {
    need(!(token?.id < vocab.length) || !known.has(token.token) || vocab[token.id] === token.token,
      `'tokenizer.special_tokens.${name}' is ${shown(token?.token)} with id ${token?.id}, but line ${token?.id + 1} `
      + `of ${vocabFile} is ${shown(vocab[token?.id])}`);
  }
  const length = m.max_sequence_length;
  need((m.tokenizer.max_sequence_length ?? length) === length, `'max_sequence_length' is ${length} but `
    + `'tokenizer.max_sequence_length' is ${shown(m.tokenizer.max_sequence_length)}`);
  const verified = isObject(m.verification) ? m.verification.max_length : null;
  need(verified == null || verified === inputLength(m), `the bundle's input length is ${inputLength(m)} `
    + `('max_sequence_length' ${length}, TFLite buckets) but its artifacts were verified at ${shown(verified)} tokens `
    + '(\'verification.max_length\')');
  const names = m.inputs.map((i) => i.name);
  need(new Set(names).size === names.length && names.includes('input_ids') && names.includes('attention_mask'),
    `'inputs' ${shown(names)} must name input_ids and attention_mask, each once`);
  for (const output of m.outputs ?? []) {
    const columns = output?.name === 'logits' && Array.isArray(output.shape) ? output.shape.at(-1) : null;
    need(!isInt(columns) || columns === m.labels.length, `the 'logits' output has ${columns} columns but 'labels' has `
      + `${m.labels.length} names`);
  }
  m.artifacts.forEach((a, i) => artifactConsistency(a, `artifacts[${i}]`, m.labels, size));
}

function artifactConsistency(a, entry, labels, vocabSize) {
  const { buckets, signatures } = a.details ?? {};
  if (a.backend === 'tflite' && buckets?.length && signatures != null) {
    need(JSON.stringify(signatures) === JSON.stringify(buckets.map((b) => `seq_${b}`)),
      `'${entry}.details.signatures' ${shown(signatures)} do not name its buckets ${shown(buckets)}`);
  }
  const metadata = isObject(a.details?.metadata) ? a.details.metadata : a.metadata;
  if (!isObject(metadata)) return;
  need(!Array.isArray(metadata.labels) || JSON.stringify(metadata.labels) === JSON.stringify(labels),
    `'${entry}' metadata labels ${shown(metadata.labels)} disagree with 'labels' ${shown(labels)}`);
  need(!isInt(metadata.vocab_size) || vocabSize == null || metadata.vocab_size === vocabSize,
    `'${entry}' metadata vocab_size ${metadata.vocab_size} disagrees with 'tokenizer.vocab_size' ${vocabSize}`);
}

/** Manifest, labels, vocabulary and model bytes of a bundle, every file verified; `expectedSha256` pins the
 * manifest (and through its SHA-256 list, every file). */
export async function openBundle(source, precision = null, expectedSha256 = null) {
  const want = parsePin(expectedSha256);
  let manifest;
  const manifestBytes = await source.read('manifest.json');
  const pin = await sha256(manifestBytes); // the bundle's pin (docs/manifest.md)
  if (want !== null && pin !== want) {
    throw new BundleError(`${source.describe()}manifest.json has SHA-256 ${pin}, not the pinned ${want}: this is not the `
      + 'bundle the app was built for', 'serve the bundle whose pin the converter printed, or update expectedSha256');
  }
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(manifestBytes));
  } catch (err) {
    throw new BundleError(`manifest.json is not valid JSON: ${err.message}`, DAMAGED);
  }
  checkManifest(manifest);
  const artifact = chooseArtifact(manifest, precision);
  const labels = textLines(await verifiedFile(source, manifest, 'labels.txt'));
  const vocabFile = manifest.tokenizer.vocab_file ?? 'vocab.txt';
  const vocab = textLines(await verifiedFile(source, manifest, vocabFile));
  checkConsistency(manifest, labels, vocab, vocabFile);
  const model = await verifiedFile(source, manifest, artifact.file);
  return { manifest, artifact, labels, vocab, model, pin, where: source.describe() };
}

/** The model file must run what its manifest entry and the manifest say: its seq_<length> signatures are the
 * listed buckets, and each takes exactly the manifest's inputs. `model`: a BucketedModel. */
export function checkModelAgreement(manifest, artifact, model) {
  const listed = artifact.details?.buckets;
  if (listed && JSON.stringify([...listed].sort((a, b) => a - b)) !== JSON.stringify(model.buckets)) {
    throw new BundleError(`${artifact.file} has buckets ${model.buckets.join(', ')} but the manifest lists `
      + `${[...listed].sort((a, b) => a - b).join(', ')}`, `the model file does not belong to this manifest; ${DISAGREE}`);
  }
  const names = manifest.inputs.map((i) => i.name).sort();
  for (const [bucket, inputs] of model.signatureInputs) {
    if (JSON.stringify([...inputs].sort()) !== JSON.stringify(names)) {
      throw new BundleError(`${artifact.file}'s signature seq_${bucket} takes ${inputs.join(', ')} but the manifest's `
        + `inputs are ${names.join(', ')}`, `the model file does not belong to this manifest; ${DISAGREE}`);
    }
  }
}
