#!/usr/bin/env bash
# Copy a PocketBERT bundle into the demo app's assets, where the app looks for it:
#
#   android_demo/copy_bundle.sh BUNDLE_DIR [--precision P] [--assets DIR]
#
# BUNDLE_DIR is a directory written by `python -m converter … --format tflite` (or the default
# tflite,onnx). The bundle goes to app/src/main/assets/<task>/ (ner or classification; the app has one
# slot per task and replaces what was there): manifest.json, vocab.txt, labels.txt and ONE TFLite model,
# the verified artifact the app would choose (int8-dynamic, other int8, int4, fp16, fp32, the runtime's rule),
# or the one of --precision. Sizes and SHA-256 are checked against the manifest before anything is copied.
# --assets DIR copies into DIR/<task> instead (tests use it). Needs python3 (to read the manifest).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bundle=""
precision=""
assets="$here/app/src/main/assets"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --precision) precision="$2"; shift 2 ;;
        --assets) assets="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        -*) echo "copy_bundle.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) [[ -z "$bundle" ]] || { echo "copy_bundle.sh: one BUNDLE_DIR only" >&2; exit 2; }; bundle="$1"; shift ;;
    esac
done
[[ -n "$bundle" ]] || { echo "usage: copy_bundle.sh BUNDLE_DIR [--precision P] [--assets DIR]" >&2; exit 2; }
command -v python3 >/dev/null || { echo "copy_bundle.sh: python3 is needed to read the manifest" >&2; exit 2; }

# Prints "<task>" then the files to copy, one per line; exits 3 with the reason if the bundle is unusable.
plan="$(python3 - "$bundle" "$precision" <<'PY'
import hashlib, json, sys
from pathlib import Path

bundle, precision = Path(sys.argv[1]), sys.argv[2] or None
def fail(problem, fix):
    print(f"copy_bundle.sh: {problem}\n  fix: {fix}", file=sys.stderr)
    sys.exit(3)

manifest_path = bundle / "manifest.json"
if not manifest_path.is_file():
    fail(f"{bundle} has no manifest.json, so it is not a PocketBERT bundle",
         "give the directory written by `python -m converter … --out DIR`")

root = bundle.resolve()
def inside(name, entry):
    """The bundle boundary (docs/manifest.md §6): a relative name, no '..', no symbolic link leading out."""
    plain = isinstance(name, str) and not name.startswith("/") and "\\" not in name \
        and all(part not in ("", ".", "..") for part in name.split("/"))
    real = (bundle / name).resolve() if plain else None
    if real is None or real == root or not real.is_relative_to(root):
        fail(f"{entry} {name!r} leads outside the bundle {str(bundle)!r}",
             "copy a bundle as the converter wrote it, with no names or symbolic links leading out of it")
    return name

m = json.loads((bundle / inside("manifest.json", "the manifest")).read_text(encoding="utf-8"))
version = m.get("schema_version")
if not isinstance(version, int) or isinstance(version, bool) or version < 1:
    fail(f"manifest.json: 'schema_version' must be a positive integer, not {version!r}",
         "copy the bundle again, or convert the model again with this version of pocketbert")
if version > 1:
    fail(f"bundle schema {version} is newer than this app reads (1)", "update the app, or convert with a matching pocketbert")
if m.get("task") not in ("ner", "classification"):
    fail(f"task {m.get('task')!r} is not ner or classification", "convert a NER or classification model")

for i, a in enumerate(m.get("artifacts", [])):
    inside(a.get("file"), f"artifacts[{i}].file")
for name in m.get("files", {}):
    inside(name, "files key")

def rank(p):
    return 0 if p == "int8-dynamic" else 1 if p.startswith("int8") else 2 if p.startswith("int4") else {"fp16": 3, "fp32": 4}.get(p, 5)

candidates = [a for a in m.get("artifacts", []) if a.get("backend") == "tflite"
              and (a.get("verification") or {}).get("passed") and (bundle / a["file"]).is_file()
              and (precision is None or a["precision"] == precision)]
if not candidates:
    have = ", ".join(a.get("recipe", "?") for a in m.get("artifacts", [])) or "none"
    fail(f"no verified tflite{':' + precision if precision else ''} model in {bundle} (it has: {have})",
         "convert with --format tflite (the default builds tflite and onnx)")
artifact = min(candidates, key=lambda a: rank(a["precision"]))
files = [inside(m["tokenizer"].get("vocab_file", "vocab.txt"), "tokenizer.vocab_file"), "labels.txt", artifact["file"]]
for name in files:
    entry, path = m.get("files", {}).get(name), bundle / name
    if entry is None or not path.is_file():
        fail(f"{name} is missing from the bundle or its manifest", "copy the complete bundle directory again")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    if path.stat().st_size != entry["bytes"] or digest.hexdigest() != entry["sha256"]:
        fail(f"{name} does not match the manifest's size and SHA-256", "copy the bundle again, or convert again")
print(m["task"])
print(artifact["recipe"])
print("\n".join(["manifest.json"] + files))
PY
)"
task="$(sed -n 1p <<<"$plan")"
recipe="$(sed -n 2p <<<"$plan")"
target="$assets/$task"
rm -rf "$target"
mkdir -p "$target"
while IFS= read -r file; do
    mkdir -p "$(dirname "$target/$file")"
    cp "$bundle/$file" "$target/$file"
done < <(sed -n '3,$p' <<<"$plan")
echo "copied the $task bundle ($recipe) to $target:"
ls -l "$target" | sed -n '2,$p'
