"""The ``pocketbert`` npm package (web/) used as a web developer uses it.

``npm pack`` in web/, the tarball installed into a fresh temporary project (offline: the tarball and npm's cache,
which ``npm ci`` in web/ filled), a ten-line app bundled there with esbuild and the package's esbuild plugin (which
copies LiteRT.js's WebAssembly beside the bundle: the app's author copies nothing), served on localhost and run in
Debian's chromium (headless, playwright-core) on the ``sst2-phone`` and ``ner-phone`` bundles the web demo's tests
convert and on ``ner-phone`` cut to its fp32 file (``web_bundles``, shared). The app's answers are held to the
Python runtime's: NER entities and spans (code points and UTF-16 units), labels, scores within docs/web.md's
tolerances (fp32 1e-4; the int4 files: 0.05, and at most one text in ten may differ where a label sits on a near
tie). Served cross-origin isolated, the pipeline runs LiteRT.js's threaded build, and says so. The package's checks
run in the browser: the pin, a wrong task, a newer converter, a missing file, and a manifest that disagrees with its
files (labels, vocabulary size, the model's buckets and inputs). ``tsc`` checks the declarations against the
developer's code, and the package's own node tests run.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import threading
import warnings
from pathlib import Path

import pytest

from .test_web_demo import (INT4_SCORE_TOLERANCE, PACKAGE, SCORE_TOLERANCE, SEED, WEB, _close, _conll_dev,
                            _sst2_dev, chromium, demo_modules, package_modules, web_bundles)  # noqa: F401  (fixtures)

#: The app a developer writes (docs/web.md, README): the bundle, task, pin and texts come from the page's query.
APP = """\
import { pipeline } from 'pocketbert';

const query = new URLSearchParams(location.search);
const texts = await (await fetch(query.get('texts'))).json();
try {
  const model = await pipeline(query.get('bundle'), { task: query.get('task'), precision: query.get('precision'),
    threads: query.has('threads') ? Number(query.get('threads')) : null, expectedSha256: query.get('pin') });
  const results = [];
  const options = model.task === 'ner' ? { aggregation: 'simple' } : { topK: null };
  for (const text of texts) results.push(await model(text, options));
  model.dispose();
  const disposed = await model(texts[0]).then(() => null, (err) => err.problem);
  window.done = { info: model.info, results, disposed };
} catch (err) {
  window.done = { error: err.problem ?? String(err.message ?? err), fix: err.fix ?? null };
}
"""

BUILD = """\
import { build } from 'esbuild';
import { pocketbertWasm } from 'pocketbert/esbuild';

await build({ entryPoints: ['app.js'], bundle: true, format: 'esm', target: 'es2022', outdir: 'dist',
  plugins: [pocketbertWasm()] });
"""

INDEX = ('<!doctype html><meta charset="utf-8"><title>app</title><link rel="icon" href="data:,">'
         '<script type="module" src="app.js"></script>\n')

#: Drives the app's pages in chromium: SPEC {chromium, playwright, profile, pages: [{name, url}]} -> OUT
DRIVER = """\
import { readFileSync, writeFileSync } from 'node:fs';
const [specPath, outPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, 'utf8'));
const { chromium } = await import(spec.playwright);
const browser = await chromium.launchPersistentContext(spec.profile, { executablePath: spec.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'] });
const out = {};
try {
  for (const { name, url } of spec.pages) {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(url);
    await page.waitForFunction(() => window.done !== undefined, null, { timeout: 600000 });
    out[name] = { ...(await page.evaluate(() => window.done)), errors,
      isolated: await page.evaluate(() => crossOriginIsolated) };
    await page.close();
  }
} finally {
  await browser.close();
}
writeFileSync(outPath, JSON.stringify(out));
"""


def _run(command: list[str], cwd: Path, timeout: int = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    """``npm pack`` of web/: the tarball and the files it holds."""
    package_modules()
    out = tmp_path_factory.mktemp("web-pack")
    done = _run(["npm", "pack", "--json", "--pack-destination", str(out)], PACKAGE)
    assert done.returncode == 0, done.stderr[-3000:]
    packed = json.loads(done.stdout)[0]
    return out / packed["filename"], [f["path"] for f in packed["files"]]


@pytest.fixture(scope="module")
def project(tarball, tmp_path_factory):
    """A fresh project with the tarball installed (offline) and the app built with esbuild into dist/."""
    root = tmp_path_factory.mktemp("web-app")
    demo_modules()  # esbuild's version (and npm's cache of it) and playwright-core come from the demo page's
    esbuild = json.loads((WEB / "node_modules" / "esbuild" / "package.json").read_text(encoding="utf-8"))["version"]
    (root / "package.json").write_text(json.dumps({"name": "my-app", "private": True, "type": "module",
                                                   "dependencies": {"pocketbert": f"file:{tarball[0]}"},
                                                   "devDependencies": {"esbuild": esbuild}}), encoding="utf-8")
    (root / "app.js").write_text(APP, encoding="utf-8")
    (root / "build.mjs").write_text(BUILD, encoding="utf-8")
    install = ["npm", "install", "--no-audit", "--no-fund"]
    done = _run([*install, "--offline"], root, timeout=600)
    if done.returncode != 0:  # a cache missing a package (web/node_modules from an older install): fetch it
        done = _run([*install, "--prefer-offline"], root, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    done = _run(["node", "build.mjs"], root)
    assert done.returncode == 0, done.stderr[-3000:]
    (root / "dist" / "index.html").write_text(INDEX, encoding="utf-8")
    return root


def test_the_tarball_holds_the_code_declarations_and_litert_wasm_and_no_tests(tarball):
    files = set(tarball[1])
    for name in ("package.json", "src/index.js", "src/esbuild.js", "types/index.d.ts", "types/esbuild.d.ts",
                 *(f"wasm/litert_wasm{kind}_internal.{ext}" for kind in ("", "_threaded", "_compat")
                   for ext in ("js", "wasm"))):
        assert name in files, (name, sorted(files))
    assert not [f for f in files if f.startswith(("test/", "tools/", "node_modules/", "bench/"))], sorted(files)
    manifest = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "pocketbert" and "private" not in manifest and manifest["type"] == "module"


def test_the_app_bundle_carries_litert_wasm_the_developer_copied_nothing(project):
    installed = project / "node_modules" / "pocketbert"
    assert installed.is_dir() and not installed.is_symlink()
    wasm = project / "dist" / "pocketbert-wasm"
    for kind in ("", "_threaded", "_compat"):
        for ext in ("js", "wasm"):
            name = f"litert_wasm{kind}_internal.{ext}"
            assert (wasm / name).read_bytes() == (installed / "wasm" / name).read_bytes(), name
    assert sorted(p.name for p in (project / "dist").iterdir()) == ["app.js", "index.html", "pocketbert-wasm"]


def test_typescript_checks_the_developers_code_against_the_declarations(project):
    tsc = PACKAGE / "node_modules" / "typescript" / "bin" / "tsc"
    shutil.copy(PACKAGE / "types" / "usage.ts", project / "usage.ts")
    (project / "misuse.ts").write_text("import { pipeline } from 'pocketbert';\n"
                                       "const ner = await pipeline('m/', { task: 'ner' });\n"
                                       "export const bad = await ner(42);\n", encoding="utf-8")
    config = {"compilerOptions": {"target": "es2022", "module": "nodenext", "moduleResolution": "nodenext",
                                  "lib": ["es2022", "dom"], "strict": True, "noEmit": True, "types": []}}
    for files, ok in ((["usage.ts"], True), (["misuse.ts"], False)):
        (project / "tsconfig.json").write_text(json.dumps({**config, "files": files}), encoding="utf-8")
        done = _run(["node", str(tsc), "--noEmit", "-p", "tsconfig.json"], project)
        assert (done.returncode == 0) == ok, done.stdout[-3000:]
    assert "misuse.ts(3," in done.stdout and "TS2345" in done.stdout, done.stdout
    done = _run(["node", str(tsc), "-p", "types/tsconfig.json"], PACKAGE)  # the package's own check
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_package_passes_its_node_tests():
    package_modules()
    from pocketbert.converter.builtin import BUILTIN

    vocab = BUILTIN["minilm"].path() / "vocab.txt"
    done = _run(["node", "--test", "test/"], PACKAGE, env={**os.environ, "POCKETBERT_MINILM_VOCAB": str(vocab)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# skipped 0" in done.stdout and "# pass " in done.stdout


# --- the app in the browser -----------------------------------------------------------------------------------
NER_TEXTS = 20
SST2_TEXTS = 20
#: a code point beyond U+FFFF before the entities: code-point and UTF-16 offsets differ by one from there on
ASTRAL = "🙂 Angela Merkel met Emmanuel Macron in Paris."
PAIRS = [["A warm, funny and beautifully acted film.", "The plot is thin and the jokes fall flat."],
         ["It is neither the best nor the worst thing I have seen this year. " * 4, "I loved it. " * 12]]


def _texts(task: str) -> list:
    long = ("Barack Obama met Angela Merkel in Berlin before flying to Paris with Emmanuel Macron. " * 6).strip()
    if task == "ner":
        return [SEED, ASTRAL, long, *_conll_dev(NER_TEXTS)]
    return [SEED, ASTRAL, long, *_sst2_dev(SST2_TEXTS), *PAIRS]


def _place(source: Path, target: Path, manifest: dict | None = None, leave_out: tuple[str, ...] = ()) -> None:
    """The bundle's files (hard links), with an edited manifest.json when ``manifest`` is given."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.name in leave_out or path.name == "manifest.json" and manifest is not None:
            continue
        try:
            os.link(path, target / path.name)
        except OSError:
            shutil.copy(path, target / path.name)
    if manifest is not None:
        (target / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _broken(manifest: dict) -> dict[str, tuple[dict, tuple[str, ...]]]:
    """Copies of sst2-phone a careless or hostile hand made: name -> (manifest, files left out)."""
    def edited(change) -> dict:
        m = json.loads(json.dumps(manifest))
        change(m)
        return m

    def buckets(m):  # a manifest consistent in itself, whose model files run more buckets than it lists
        for a in m["artifacts"]:
            if a["backend"] == "tflite":
                a["details"]["buckets"] = a["details"]["buckets"][:1]
                a["details"]["signatures"] = a["details"]["signatures"][:1]
        m["verification"]["max_length"] = m["artifacts"][0]["details"]["buckets"][0]

    return {"reversed": (edited(lambda m: m["labels"].reverse()), ()),
            "newer": (edited(lambda m: m.update(schema_version=m["schema_version"] + 1)), ()),
            "missing": (manifest, ("vocab.txt",)),
            "vocab": (edited(lambda m: m["tokenizer"].update(vocab_size=m["tokenizer"]["vocab_size"] + 1)), ()),
            "buckets": (edited(buckets), ()),
            "inputs": (edited(lambda m: m.update(inputs=m["inputs"][:2])), ())}


def _serve(root: Path, headers: dict[str, str]):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def end_headers(self):
            for key, value in headers.items():
                self.send_header(key, value)
            super().end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def app(project, web_bundles, chromium, tmp_path_factory):  # noqa: F811  (fixtures imported above)
    """What the app computed on each page: {name: {info, results, disposed} or {error, fix}}."""
    root = project / "dist"
    models = {"ner-fp32": web_bundles["ner"], "sst2-phone": web_bundles["classification"],
              "ner-phone": web_bundles["ner_phone"]}
    for name, bundle in models.items():
        _place(bundle, root / "models" / name)
    sst2 = json.loads((models["sst2-phone"] / "manifest.json").read_text(encoding="utf-8"))
    for name, (manifest, leave_out) in _broken(sst2).items():
        _place(models["sst2-phone"], root / "models" / f"sst2-{name}", manifest, leave_out)
    for task in ("ner", "classification"):
        (root / f"texts-{task}.json").write_text(json.dumps(_texts(task)), encoding="utf-8")
    pins = {name: hashlib.sha256((b / "manifest.json").read_bytes()).hexdigest() for name, b in models.items()}
    plain, url = _serve(root, {})
    isolated, isolated_url = _serve(root, {"Cross-Origin-Opener-Policy": "same-origin",
                                           "Cross-Origin-Embedder-Policy": "require-corp"})
    ner, cls = "texts=texts-ner.json", "texts=texts-classification.json"
    pages = {"ner-fp32": f"{url}?bundle=models/ner-fp32/&task=ner&{ner}&pin={pins['ner-fp32']}",
             "sst2-phone": f"{url}?bundle=models/sst2-phone/&{cls}&pin=sha256:{pins['sst2-phone']}",
             "sst2-fp32": f"{url}?bundle=models/sst2-phone&task=text-classification&precision=fp32&{cls}",
             "ner-phone": f"{url}?bundle=models/ner-phone/&{ner}",
             "threaded": f"{isolated_url}?bundle=models/ner-phone/&{ner}",
             "wrong-task": f"{url}?bundle=models/ner-fp32/&task=classification&{cls}",
             "wrong-pin": f"{url}?bundle=models/sst2-phone/&{cls}&pin={pins['ner-fp32']}",
             **{f"sst2-{name}": f"{url}?bundle=models/sst2-{name}/&{cls}" for name in _broken(sst2)}}
    work = tmp_path_factory.mktemp("web-app-run")
    spec = {"chromium": chromium, "profile": str(work / "profile"), "pages": [{"name": n, "url": u}
                                                                             for n, u in pages.items()],
            "playwright": (WEB / "node_modules" / "playwright-core" / "index.mjs").as_uri()}
    (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    (work / "driver.mjs").write_text(DRIVER, encoding="utf-8")
    try:
        done = _run(["node", str(work / "driver.mjs"), str(work / "spec.json"), str(work / "out.json")], work,
                    timeout=1200)
    finally:
        for server in (plain, isolated):
            server.shutdown()
            server.server_close()
    assert done.returncode == 0, done.stderr[-4000:]
    return {**json.loads((work / "out.json").read_text(encoding="utf-8")), "models": models}


def _utf16(text: str, index: int) -> int:
    return len(text[:index].encode("utf-16-le")) // 2


def _ner_agrees(page: dict, bundle: Path, precision: str, tolerance: float, texts: list[str]) -> list:
    """The texts whose entities differ from the runtime's (groups, words, spans; scores within tolerance)."""
    from pocketbert import runtime

    ner = runtime.load(bundle, "tflite", precision=precision, threads=1)
    differing, entities = [], 0
    for text, got in zip(texts, page["results"], strict=True):
        for e in got:  # UTF-16 offsets: what text.slice() takes in JavaScript
            assert (e["start16"], e["end16"]) == (_utf16(text, e["start"]), _utf16(text, e["end"])), (text, e)
        expected = ner(text)
        entities += len(expected)
        if not _close(got, expected, tolerance):
            differing.append((text, got, expected))
    assert entities > len(texts), "the texts hold too few entities to say anything"
    return differing


def test_a_float_ner_bundle_gives_the_runtimes_entities_and_spans(app):
    page = app["ner-fp32"]
    assert "error" not in page, page
    info = page["info"]
    assert (info["task"], info["recipe"], info["file"]) == ("ner", "tflite:fp32", "model.tflite")
    assert info["buckets"] == [32, 64] and info["maxLength"] == 64 and info["where"].endswith("models/ner-fp32/")
    runtime_info = info["runtime"]
    assert (runtime_info["file"], runtime_info["threaded"], runtime_info["threads"]) == \
        ("litert_wasm_internal.js", False, 1), runtime_info
    assert runtime_info["wasm"].endswith("/pocketbert-wasm/")
    texts = _texts("ner")
    assert _ner_agrees(page, app["models"]["ner-fp32"], "fp32", SCORE_TOLERANCE, texts) == []
    astral = page["results"][1]
    assert [(e["entity_group"], e["start"], e["start16"]) for e in astral][:2] == [("PER", 2, 3), ("PER", 20, 21)]
    assert page["disposed"] == "the pipeline was disposed" and page["errors"] == []


def test_ner_phone_int4_gives_the_runtimes_entities(app):
    for name in ("ner-phone", "threaded"):
        page = app[name]
        assert "error" not in page, (name, page)
        assert page["info"]["recipe"] == "tflite:int4-dynamic" and page["errors"] == [], (name, page)
        texts = _texts("ner")
        differing = _ner_agrees(page, app["models"]["ner-phone"], "int4-dynamic", INT4_SCORE_TOLERANCE, texts)
        assert len(differing) <= len(texts) // 10, (name, differing[:3])


def test_cross_origin_isolated_the_threaded_build_runs_and_says_so(app):
    page, plain = app["threaded"], app["ner-phone"]
    assert page["isolated"] is True and plain["isolated"] is False
    threaded = page["info"]["runtime"]
    assert threaded["file"] == "litert_wasm_threaded_internal.js" and threaded["threaded"] is True, threaded
    assert threaded["threads"] >= 1 and plain["info"]["runtime"]["file"] == "litert_wasm_internal.js"


def _classification_agrees(page: dict, bundle: Path, precision: str, tolerance: float) -> int:
    """The near ties (top two scores closer than two tolerances: either runtime may order them); any other
    difference in labels or scores fails."""
    from pocketbert import runtime
    from pocketbert.runtime.classification import TruncationWarning

    classifier = runtime.load(bundle, "tflite", precision=precision, threads=1)
    ties = 0
    for text, got in zip(_texts("classification"), page["results"], strict=True):
        with warnings.catch_warnings():  # the long texts and pair are cut to 64 tokens, here as in the browser
            warnings.simplefilter("ignore", TruncationWarning)
            expected = classifier(tuple(text) if isinstance(text, list) else text, top_k=None)
        if abs(expected[0]["score"] - expected[1]["score"]) < 2 * tolerance:
            ties += 1
            continue
        assert _close(got, expected, tolerance), (text, got, expected)
    return ties


def test_sst2_phone_gives_the_runtimes_labels_int4_by_default_and_fp32_when_asked(app):
    page, fp32 = app["sst2-phone"], app["sst2-fp32"]
    assert "error" not in page and "error" not in fp32, (page, fp32)
    assert page["info"]["recipe"] == "tflite:int4-dynamic" and page["info"]["file"] == "model.int4-dynamic.tflite"
    assert fp32["info"]["recipe"] == "tflite:fp32" and fp32["info"]["labels"] == ["negative", "positive"]
    assert page["info"]["pin"] == hashlib.sha256(
        (app["models"]["sst2-phone"] / "manifest.json").read_bytes()).hexdigest()
    assert all(len(r) == 2 for r in page["results"])  # topK null: every label
    assert _classification_agrees(fp32, app["models"]["sst2-phone"], "fp32", SCORE_TOLERANCE) == 0
    ties = _classification_agrees(page, app["models"]["sst2-phone"], "int4-dynamic", INT4_SCORE_TOLERANCE)
    assert ties <= len(page["results"]) // 10
    assert page["errors"] == [] and fp32["errors"] == []


@pytest.mark.parametrize(("page", "problem", "fix"), [
    ("wrong-task", "models/ner-fp32/ holds a ner bundle, not classification", "load a classification bundle"),
    ("wrong-pin", "manifest.json has SHA-256", "update expectedSha256"),
    ("sst2-reversed", "'labels' [\"positive\",\"negative\"] disagree with labels.txt [\"negative\",\"positive\"]",
     "copy the bundle again from its source"),
    ("sst2-newer", "bundle schema 2 is newer than this package reads (1): the bundle comes from a newer converter",
     "npm install pocketbert@latest"),
    ("sst2-missing", "models/sst2-missing/vocab.txt could not be loaded (HTTP 404)", "serve the whole bundle folder"),
    ("sst2-vocab", "'tokenizer.vocab_size' is 16001 but vocab.txt holds 16000 tokens", "copy the bundle again"),
    ("sst2-buckets", "model.int4-dynamic.tflite has buckets 32, 64 but the manifest lists 32",
     "the model file does not belong to this manifest"),
    ("sst2-inputs", "signature seq_32 takes", "the model file does not belong to this manifest"),
])
def test_the_package_refuses_what_the_runtime_refuses_saying_what_and_how_to_fix(app, page, problem, fix):
    shown = app[page]
    assert "results" not in shown, f"{page} was not refused: {shown}"
    assert problem in shown["error"] and fix in (shown["fix"] or ""), shown
    if page != "sst2-missing":  # the browser's own line for a 404
        assert shown["errors"] == [], shown["errors"]
