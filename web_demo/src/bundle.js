// A converter bundle read in the page: manifest (schema 1), the TFLite artifact to run, and every file
// checked against the manifest's size and SHA-256 (Web Crypto) before it is used. docs/manifest.md.

export const SCHEMA_VERSION = 1;

/** A problem the user can act on: what is wrong and how to fix it (shown in the page, never as markup). */
export class BundleError extends Error {
  constructor(problem, fix) {
    super(`${problem} (${fix})`);
    this.problem = problem;
    this.fix = fix;
  }
}

/** Files served beside the page: fetched from `base` (a folder URL ending in "/"). */
export function folderSource(base) {
  return {
    describe: () => base,
    async read(name) {
      const response = await fetch(new URL(name, new URL(base, location.href)));
      if (!response.ok) throw new BundleError(`${base}${name} could not be loaded (HTTP ${response.status})`,
        'put the whole bundle there: node build.mjs --ner or --classification BUNDLE_DIR copies it (docs/web.md), '
        + 'or drop the bundle folder onto this page');
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

const isPositiveInt = (v) => Number.isInteger(v) && v > 0 && typeof v === 'number';

function checkManifest(m) {
  if (typeof m !== 'object' || m === null || Array.isArray(m)) {
    throw new BundleError('manifest.json is not a JSON object', 'convert the model again');
  }
  if (!isPositiveInt(m.schema_version)) {
    throw new BundleError(`manifest.json has schema_version ${JSON.stringify(m.schema_version)}, not a positive integer`,
      'convert the model again with this version of PocketBERT');
  }
  if (m.schema_version > SCHEMA_VERSION) {
    throw new BundleError(`bundle schema ${m.schema_version} is newer than this page reads (${SCHEMA_VERSION})`,
      'use the web demo of the PocketBERT version that wrote the bundle');
  }
  if (!['ner', 'classification'].includes(m.task)) {
    throw new BundleError(`manifest.json has task ${JSON.stringify(m.task)}`, 'use a NER or classification bundle');
  }
  for (const key of ['labels', 'artifacts']) {
    if (!Array.isArray(m[key]) || !m[key].length) {
      throw new BundleError(`manifest.json has no ${key}`, 'convert the model again');
    }
  }
  if (typeof m.files !== 'object' || m.files === null || typeof m.tokenizer !== 'object' || m.tokenizer === null) {
    throw new BundleError('manifest.json has no files or tokenizer section', 'convert the model again');
  }
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

async function sha256(bytes) {
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
  if (!entry) throw new BundleError(`manifest.json does not list ${name}`, 'convert the model again');
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

/** Manifest, labels, vocabulary and model bytes of a bundle, every file verified. */
export async function openBundle(source, precision = null) {
  let manifest;
  const manifestBytes = await source.read('manifest.json');
  const pin = await sha256(manifestBytes); // the bundle's pin (docs/manifest.md), shown by the page
  try {
    manifest = JSON.parse(new TextDecoder().decode(manifestBytes));
  } catch (err) {
    throw new BundleError(`manifest.json is not valid JSON: ${err.message}`, 'copy the bundle again');
  }
  checkManifest(manifest);
  const artifact = chooseArtifact(manifest, precision);
  const labels = textLines(await verifiedFile(source, manifest, 'labels.txt'));
  if (JSON.stringify(labels) !== JSON.stringify(manifest.labels)) {
    throw new BundleError('labels.txt and the manifest\'s labels differ', 'copy the bundle again');
  }
  const vocab = textLines(await verifiedFile(source, manifest, manifest.tokenizer.vocab_file ?? 'vocab.txt'));
  const model = await verifiedFile(source, manifest, artifact.file);
  return { manifest, artifact, labels, vocab, model, pin, where: source.describe() };
}
