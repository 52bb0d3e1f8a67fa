"""The web demo (web_demo/): the page run in headless Chromium against the Python runtime.

The page (UI only: it imports the ``pocketbert`` package in web/, whose own tests are tests/test_web_package.py) is
built (esbuild) into a temporary folder with two bundles converted here (TFLite fp32 and tflite:int4-dynamic,
buckets 32 and 64: sst2-phone, the SST-2 demo with factored word embeddings, and ner-phone, the NER demo tuned
through int4) and a third cut from ner-phone (its fp32 file alone: the page's float path), served from localhost,
and driven by ``web_demo/tools/browser_check.mjs`` (playwright-core with Debian's chromium). What the browser
computes is compared here with the runtime: the seed example's entities, the golden vectors, 2,000+ random texts
tokenized by the runtime, NER entities and label scores of real texts (fp32: within 1e-4; the int4 files, which the
page chooses by default there: the runtime's labels, logits within 0.1; the runtime's entities), a tampered model
refused with a visible message, and the measure panel's record in the benchmarks' schema; Measure keeps the page
responsive and can be cancelled; a missing bundle, the page opened as a file and any console error (LiteRT's own
INFO and WARNING lines are not errors) are checked in the same browser run. The JS modules' own node tests (decoding
edge cases) run too. Debian's chromium is installed with apt-get when missing and we are root
(web_demo/tools/ensure_chromium.py); otherwise, as a missing node or npm, it is a failure with the command that
installs it, not a skip; missing npm packages are installed with ``npm ci`` (in web/, then web_demo/). The three
bundles are built once per test session and shared with tests/test_web_package.py (``web_bundles``).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import pytest
from filelock import FileLock

from pocketbert.converter.backends.tflite_compact import table_count
from pocketbert.converter.output.cut import cut

from .conftest import DATA
from .runtime.conftest import cls_bundle  # noqa: F401  (session fixture: a small real bundle)
from .shared import once, worker_threads

REPO = Path(__file__).resolve().parents[1]
WEB = REPO / "web_demo"
PACKAGE = REPO / "web"
GOLDEN = REPO / "tests" / "golden"
SEED = "Jeff Dean is a computer scientist at Google in California."
FUZZ_PER_TOKENIZER = 1100  # single texts per tokenizer; pairs are not a web-page input
SCORE_TOLERANCE = 1e-4
#: The int4 file's logits, page against runtime. Both quantise activations per row at run time (XNNPACK's
#: qd8-f32-qc4w), but the wasm build's float kernels differ from AVX-512's in the last bits (fp32 files agree
#: within 1e-4, not exactly), and a last-bit difference can move an activation to the next int8 step. Measured
#: on 878 SST-2 texts (docs/web.md): the SST-2 demo's int4 file 456 bit-identical, worst 0.048; sst2-phone's
#: (narrow, weights on the int4 grid, larger logits) 485 bit-identical, 99% within 0.017, one text at 0.094; against
#: int4's own distance from fp32 of up to 2.5. About twice the worst seen; labels closer than two tolerances are a
#: tie either runtime may break.
INT4_LOGIT_TOLERANCE = 0.2
INT4_DEV_SENTENCES = 100
#: An entity's score is the mean of its tokens' probabilities: logits within INT4_LOGIT_TOLERANCE move it by less
INT4_SCORE_TOLERANCE = 0.05


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def npm_ci(folder: Path, needed: tuple[str, ...]) -> None:
    """``npm ci`` in ``folder`` unless the packages ``needed`` are installed there; one process at a time (this
    module and tests/test_web_package.py may run in two workers at once)."""
    with FileLock(str(Path(tempfile.gettempdir()) / f"pocketbert-npm-ci-{folder.name}.lock")):
        if not all((folder / "node_modules" / name).is_dir() for name in needed):
            done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=folder, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, f"npm ci failed in {folder.name}/:\n{done.stderr[-3000:]}"


def package_modules() -> Path:
    """The pocketbert package's own node_modules (LiteRT.js, TypeScript) and its wasm/ folder, filled from LiteRT.js
    by the package's prepare script."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    assert not missing, (f"{' and '.join(missing)} not found: the web tests need Node 18+ "
                         "(apt-get install -y nodejs npm)")
    npm_ci(PACKAGE, ("@litertjs/core", "typescript"))
    if not (PACKAGE / "wasm" / "litert_wasm_internal.wasm").is_file():
        done = subprocess.run(["npm", "run", "prepare"], cwd=PACKAGE, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
    return PACKAGE / "node_modules"


def demo_modules() -> Path:
    """The page's node_modules (the package linked from web/, esbuild, playwright-core), the package's first."""
    package_modules()
    npm_ci(WEB, ("pocketbert", "esbuild", "playwright-core"))
    return WEB / "node_modules"


@pytest.fixture(scope="module")
def node_modules():
    return demo_modules()


@pytest.fixture(scope="module")
def chromium():
    """Debian's chromium, installed with apt-get when missing and we are root (as the ARM tests install QEMU)."""
    spec = importlib.util.spec_from_file_location("ensure_chromium", WEB / "tools" / "ensure_chromium.py")
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    try:
        return helper.ensure(log=lambda line: print(line, file=sys.stderr))
    except helper.ChromiumUnavailable as err:
        pytest.fail(str(err))


def _convert(name: str, out: Path, *recipes: str) -> Path:
    """``name`` as TFLite fp32, plus ``recipes``."""
    what = ["--recipe", ",".join(recipes)] if recipes else ["--format", "tflite"]
    done = subprocess.run([sys.executable, "-m", "pocketbert.converter", name, "--opt", "nonorm,relu,fold", *what,
                           # 100 verification sentences, not 1,000: what these tests check is the browser against the
                           # runtime on the bundle; the converter's own verification has tests of its own
                           "--buckets", "32,64", "--no-latency", "--verify-samples", "100", "--out", str(out),
                           # nor the dev gate: scoring ner-phone's two files on CoNLL-2003 dev took 75 of its 133 s
                           # (one thread, AVX2-only AMD EPYC, 2026-12-04)
                           "--no-dev-gate",
                           # the worker's share of the cores: at the default 2, a 40 MB model's export starts a second
                           # process that only competes with the other test worker's core
                           "--threads", str(worker_threads())],
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode == 0, f"converting {name} failed:\n{done.stderr[-3000:]}"
    return out


def sst2_phone_bundle(tmp_path_factory) -> Path:
    """sst2-phone as the browser tests convert it, once per session; also the phone bundle of the Android core's
    tests (tests/test_android_core.py), which would otherwise convert the same 40 MB model again."""
    # int4 on one real model only, the phone-sized one (sst2-demo with factored word embeddings): quantising and
    # verifying it adds ~5 s; ner-demo's int4 quantisation runs its accuracy ladder (584 s) and its file runs the
    # same ops (docs/web.md)
    return once(tmp_path_factory, "web-sst2", lambda work: _convert("sst2-phone", work / "sst2", "tflite:int4-dynamic"))


@pytest.fixture(scope="session")
def web_bundles(tmp_path_factory):
    """The three bundles of the browser tests, built once per session (every worker shares them). Each is its
    own build, so that a worker wanting only one (the Android core's sst2-phone) builds it beside this one."""
    # the phone-sized NER model: its weights are on the int4 grid, so its int4 ladder ends at the first file
    ner_phone = once(tmp_path_factory, "web-ner-phone",
                     lambda work: _convert("ner-phone", work / "ner-phone", "tflite:int4-dynamic"))
    # the NER bundle holding one fp32 file, as a float-only bundle reaches the page: ner-phone's own fp32 file, cut
    # (converting ner-demo cost the suite ~30 s; a plain word table, which ner-demo has and ner-phone factors, runs
    # in Chromium through the same package in tests/benchmarks/test_web_peers.py, on small random bundles)
    fp32_ner = once(tmp_path_factory, "web-ner",
                    lambda work: cut(ner_phone, "web", work / "ner", recipe="tflite:fp32").path)
    return {"ner": fp32_ner, "classification": sst2_phone_bundle(tmp_path_factory), "ner_phone": ner_phone}


@pytest.fixture(scope="module")
def bundles(web_bundles):
    return web_bundles


@pytest.fixture(scope="module")
def site(node_modules, bundles, tmp_path_factory):
    """The built page with both bundles and a tampered copy of the NER bundle, served on localhost."""
    root = tmp_path_factory.mktemp("web-site")
    done = subprocess.run(["node", str(WEB / "build.mjs"), "--out", str(root), "--ner", str(bundles["ner"]),
                           "--classification", str(bundles["classification"])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    shutil.copytree(bundles["ner_phone"], root / "ner-phone")  # opened with ?task=ner&ner=ner-phone/
    tampered = root / "tampered"
    shutil.copytree(root / "bundles" / "ner", tampered)  # copies, not the build's hard links
    model = bytearray((tampered / "model.tflite").read_bytes())
    model[len(model) // 2] ^= 1
    (tampered / "model.tflite").unlink()
    (tampered / "model.tflite").write_bytes(bytes(model))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def fuzz_cases(tmp_path_factory):
    out = tmp_path_factory.mktemp("web-fuzz") / "fuzz.jsonl"
    tool = REPO / "android_demo" / "core" / "tools" / "make_fuzz_cases.py"
    done = subprocess.run([sys.executable, str(tool), str(out), "--count", str(FUZZ_PER_TOKENIZER)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return [c for c in _lines(out) if c["text_pair"] is None]


def _texts() -> list[str]:
    """Real texts for both models: the seed, the golden single texts, and a long one that needs windows."""
    golden = [c["text"] for c in _lines(GOLDEN / "tokenization.jsonl") if c["text_pair"] is None]
    long = ("Barack Obama met Angela Merkel in Berlin before flying to Paris with Emmanuel Macron. " * 6).strip()
    return [SEED, *dict.fromkeys(golden), long]


def _conll_dev(count: int) -> list[str]:
    """The first ``count`` sentences of CoNLL-2003 dev, words joined by spaces."""
    from pocketbert.converter.data import load_task

    return [" ".join(words) for words in load_task("conll2003", "dev", DATA, limit=count).texts]


def _sst2_dev(count: int) -> list[str]:
    lines = (DATA / "glue" / "SST-2" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [line.split("\t")[0] for line in lines[:count]]


@pytest.fixture(scope="module")
def browser(chromium, site, fuzz_cases, tmp_path_factory):
    """What the page showed and computed (browser_check.mjs's JSON), with the files it used."""
    root, url = site
    work = tmp_path_factory.mktemp("web-browser")
    from pocketbert.converter.builtin import BUILTIN

    golden_tok = [c for c in _lines(GOLDEN / "tokenization.jsonl") if c["text_pair"] is None]
    spec = {"url": url + "?task=ner&precision=fp32", "chromium": chromium, "user_data_dir": str(work / "profile"),
            "screenshot": str(work / "screenshot-ner.png"),
            "vocab": (BUILTIN["minilm"].path() / "vocab.txt").read_text(encoding="utf-8").splitlines(),
            "settings": json.loads((GOLDEN / "tokenizers.json").read_text(encoding="utf-8")),
            "tokenization": golden_tok + fuzz_cases, "ner_golden": _lines(GOLDEN / "ner.jsonl"),
            "classification_golden": _lines(GOLDEN / "classification.jsonl"),
            "texts": {"ner": _texts(), "classification": _texts()},
            "tampered_url": url + "?task=ner&ner=tampered/&precision=fp32",
            "tampered_files": [str(p) for p in sorted((root / "tampered").iterdir())],
            "missing_url": url + "?task=ner&ner=missing/", "file_url": (root / "index.html").as_uri(),
            # no precision: the sst2 bundle holds fp32 and int4, and the page's own choice must be int4
            "int4_url": url + "?task=classification", "int4_texts": _texts() + _sst2_dev(INT4_DEV_SENTENCES),
            "int4_ner_url": url + "?task=ner&ner=ner-phone/",
            "int4_ner_texts": _texts() + _conll_dev(INT4_DEV_SENTENCES)}
    (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    done = subprocess.run(["node", str(WEB / "tools" / "browser_check.mjs"), str(work / "spec.json"),
                           str(work / "out.json")], capture_output=True, text=True, timeout=900, cwd=WEB)
    assert done.returncode == 0, f"the browser run failed:\n{done.stderr[-4000:]}"
    out = json.loads((work / "out.json").read_text(encoding="utf-8"))
    return {**out, "spec": spec, "work": work}


def test_seed_example_shows_person_organisation_and_place_at_their_offsets(browser):
    seed = browser["seed"]
    assert seed["error"] is None and seed["text"] == SEED
    found = [(e["entity_group"], SEED[e["start"]:e["end"]], e["start"], e["end"]) for e in seed["entities"]]
    assert found == [("PER", "Jeff Dean", 0, 9), ("ORG", "Google", 37, 43), ("LOC", "California", 47, 57)]
    assert seed["marks"] == ["Jeff Dean", "Google", "California"]  # highlighted in the page, in the text's case
    assert seed["shown"].startswith("Jeff DeanPER is a computer scientist at GoogleORG in CaliforniaLOC.")
    shot = browser["work"] / "screenshot-ner.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_tokenization_equals_the_runtime_on_golden_and_2000_random_texts(browser, fuzz_cases):
    cases = browser["spec"]["tokenization"]
    assert len(fuzz_cases) >= 2000
    keys = ("input_ids", "tokens", "token_type_ids", "attention_mask", "special_tokens_mask", "offsets",
            "offsets_utf16")
    differing = []
    for case, rows in zip(cases, browser["tokenization"], strict=True):
        expected = [{k: w[k] for k in keys if k in w} for w in case["windows"]]
        got = [{k: r[k] for k in keys if k in e} for r, e in zip(rows, expected)]
        if len(rows) != len(expected) or got != expected:
            differing.append(case["text"])
    assert not differing, f"{len(differing)} of {len(cases)} texts tokenized differently, e.g. {differing[:3]!r}"


def _close(got: list[dict], expected: list[dict], tolerance: float) -> bool:
    if len(got) != len(expected):
        return False
    return all({k: v for k, v in g.items() if k in e and k != "score"} == {k: v for k, v in e.items() if k != "score"}
               and abs(g["score"] - e["score"]) <= tolerance for g, e in zip(got, expected))


def test_golden_ner_and_classification_decode_like_hugging_face_in_the_browser(browser):
    wrong = []
    for record, got in zip(_lines(GOLDEN / "ner.jsonl"), browser["ner_golden"], strict=True):
        for aggregation, expected in record["expected"].items():
            if not _close(got[aggregation], expected, 1e-6):
                wrong.append((record["text"][:40], aggregation))
    for record, got in zip(_lines(GOLDEN / "classification.jsonl"), browser["classification_golden"], strict=True):
        if not _close(got, record["expected"]["top_k_all"], 1e-6):
            wrong.append((record["logits"], "classification"))
    assert not wrong, wrong


def test_entities_and_labels_of_real_texts_equal_the_runtime_fp32(browser, bundles):
    from pocketbert import runtime
    from pocketbert.runtime.classification import TruncationWarning

    texts = browser["spec"]["texts"]["ner"]
    ner = runtime.load(bundles["ner"], "tflite", precision="fp32")
    page = browser["texts"]["ner"]
    assert page["artifact"] == "tflite:fp32"
    assert any(len(r["rows"]) > 1 for r in page["results"]), "no text was long enough to need windows"
    assert {b for r in page["results"] for b in r["buckets"]} == {32, 64}
    stride = ner.default_stride
    for text, got in zip(texts, page["results"], strict=True):
        windows = ner.encoder.windows([text], stride)[0]
        assert [r["input_ids"] for r in got["rows"]] == [w.ids for w in windows], text
        assert [[list(o) for o in r["offsets"]] for r in got["rows"]] == [[list(o) for o in w.offsets] for w in windows]
        expected = ner(text)
        assert _close(got["entities"], expected, SCORE_TOLERANCE), (text, got["entities"], expected)
    classifier = runtime.load(bundles["classification"], "tflite", precision="fp32")
    page = browser["texts"]["classification"]
    for text, got in zip(browser["spec"]["texts"]["classification"], page["results"], strict=True):
        assert got["rows"][0]["input_ids"] == classifier.encoder.encode([(text, None)])[0].ids
        with warnings.catch_warnings():  # the long text is cut to 64 tokens, in the page as in the runtime
            warnings.simplefilter("ignore", TruncationWarning)
            expected = classifier(text, top_k=None)
        assert _close(got["labels"], expected, SCORE_TOLERANCE), text


def test_the_int4_file_with_shared_tables_gives_the_runtimes_answers_in_the_browser(browser, bundles):
    """LiteRT.js loads the phone-sized tflite:int4-dynamic (int4 FULLY_CONNECTED and EMBEDDING_LOOKUP on a
    16,000 × 160 table, quantisation tables shared between the bucket signatures), the page picks it by default
    over fp32, and on real texts it gives the Python runtime's labels, its logits within INT4_LOGIT_TOLERANCE."""
    import numpy as np

    from pocketbert import runtime
    from pocketbert.runtime import batching
    from pocketbert.runtime.classification import TruncationWarning

    bundle = bundles["classification"]
    path = bundle / "model.int4-dynamic.tflite"
    # the phone-sized file: its lookup table is the factored one (its size depends on which Linears the int4 ladder
    # keeps in int8 on this CPU; the table's shape does not)
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils

    graph = tfl_flatbuffer_utils.read_model(str(path))
    assert (16000, 160) in {tuple(t.shape) for g in graph.subgraphs for t in g.tensors}
    count, distinct = table_count(path)
    assert count and distinct <= count // 2 + 1, (count, distinct)  # two signatures, one table each
    page = browser["int4"]
    assert "error" not in page, f"the page did not load the int4 file: {page}"
    assert page["artifact"] == "tflite:int4-dynamic" and "model.int4-dynamic.tflite" in page["bundle"], page["bundle"]
    int4 = runtime.load(bundle, "tflite", precision="int4-dynamic", threads=1)
    worst, ties = 0.0, 0
    for text, got in zip(browser["spec"]["int4_texts"], page["results"], strict=True):
        ids = int4.encoder.encode([(text, None)])[0].ids
        assert got["input_ids"] == ids, text
        feeds = batching.pad([(ids, [0] * len(ids))], int4.bundle.input_names, int4.encoder.pad_id)
        expected = np.asarray(int4.backend.run(feeds), np.float64).reshape(-1)
        delta = float(np.abs(np.asarray(got["logits"], np.float64) - expected).max())
        assert delta <= INT4_LOGIT_TOLERANCE, (text, got["logits"], expected.tolist())
        worst = max(worst, delta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncationWarning)
            labels = int4(text, top_k=None)
        top2 = np.sort(expected)[-2:]
        if top2[1] - top2[0] < 2 * INT4_LOGIT_TOLERANCE:
            ties += 1
            continue
        assert [g["label"] for g in got["labels"]] == [e["label"] for e in labels], (text, got["labels"], labels)
    assert ties <= len(page["results"]) // 10, f"{ties} near ties: the texts say little about the labels"
    print(f"int4 in the browser: {len(page['results'])} texts, worst |Δ logit| {worst:.3g}, {ties} near ties")


def test_the_ner_phone_int4_file_gives_the_runtimes_entities_in_the_browser(browser, bundles):
    """LiteRT.js loads ner-phone's tflite:int4-dynamic (every Linear int4, weights on the int4 grid, the token-type
    table float), the page picks it by default, and on real texts it tokenizes as the runtime does and finds the
    runtime's entities: the same groups and spans, scores within INT4_SCORE_TOLERANCE. A text where one token's label
    sits on a near tie may come out differently in either runtime: at most one text in ten."""
    from pocketbert import runtime

    page = browser["int4_ner"]
    assert "error" not in page, f"the page did not load the int4 NER file: {page}"
    assert page["artifact"] == "tflite:int4-dynamic" and "ner-phone" in page["bundle"], page["bundle"]
    ner = runtime.load(bundles["ner_phone"], "tflite", precision="int4-dynamic", threads=1)
    texts = browser["spec"]["int4_ner_texts"]
    entities, differing = int4_entities_agree(ner, texts, page["results"])
    print(f"int4 NER in the browser: {len(texts)} texts, {entities} entities, {differing} texts differing")


def int4_entities_agree(ner, texts: list[str], results: list[dict]) -> tuple[int, int]:
    """The page's rows and entities of each text (``results``: {rows, entities}) against the runtime ``ner`` running
    an int4 file: the same token ids, the same groups and spans with scores within INT4_SCORE_TOLERANCE on at least
    nine texts in ten (a token's label on a near tie may come out differently in either runtime).  Returns (entities
    seen, texts differing)."""
    differing, entities = [], 0
    for text, got in zip(texts, results, strict=True):
        assert got["rows"] == [w.ids for w in ner.encoder.windows([text], ner.default_stride)[0]], text
        expected = ner(text)
        entities += len(expected)
        if not _close(got["entities"], expected, INT4_SCORE_TOLERANCE):
            differing.append((text, got["entities"], expected))
    assert entities > len(texts), "the texts hold too few entities to say anything"
    assert len(differing) <= len(texts) // 10, differing[:3]
    return entities, len(differing)


def test_a_tampered_model_is_refused_with_a_visible_message(browser):
    for where in ("tampered_folder", "tampered_files"):
        error = browser[where]["error"]
        assert error and "model.tflite does not match the manifest's size and SHA-256" in error, (where, error)
        assert "loading" not in browser[where]["status"] and "not loaded" in browser[where]["status"], browser[where]
    assert browser["tampered_folder"]["highlighted"] == "", "nothing may be shown from a refused bundle"


def test_the_page_shows_which_bundle_is_loaded(browser, bundles):
    shown = browser["seed"]["bundle"]
    pin = hashlib.sha256((bundles["ner"] / "manifest.json").read_bytes()).hexdigest()
    assert shown is not None, "the page does not say which bundle it loaded"
    for part in ("ner-phone", "(ner)", "tflite:fp32", "bundles/ner/", f"pin sha256 {pin}"):
        assert part in shown, (part, shown)


def test_a_missing_bundle_says_how_to_provide_it(browser):
    missing = browser["missing"]
    assert missing["error"] and "missing/manifest.json could not be loaded (HTTP 404)" in missing["error"], missing
    assert "docs/web.md" in missing["error"] and "node build.mjs --ner" in missing["error"], missing
    assert "README" not in missing["error"] and "not loaded" in missing["status"], missing
    assert (REPO / "docs" / "web.md").is_file()


def test_opened_as_a_file_the_page_says_how_to_serve_it(browser, site):
    opened = browser["file"]
    assert opened["status"] != "starting …", "opened from file:// the page stays at 'starting …'"
    assert opened["error"] and "file://" in opened["error"], opened
    assert f"python3 -m http.server -d '{site[0]}/' 8000 --bind 127.0.0.1" in opened["error"], opened
    assert opened["demo"] == "undefined", "the app must not start where it cannot fetch its bundles"


def test_no_page_logs_a_console_error(browser):
    """Uncaught errors and console errors of every page and its worker fail the test: LiteRT's INFO and WARNING
    log lines, console errors until the page routed them by severity, are console.debug and console.warn."""
    console = dict(browser["console"])
    assert set(console) == {"main", "tampered", "missing", "file", "int4", "int4_ner"}
    missing = console.pop("missing")
    # the browser's own line for the 404 the page reports
    assert all(e.startswith("Failed to load resource: the server responded with a status of 404")
               for e in missing["errors"]), missing["errors"]
    assert {page: seen["errors"] for page, seen in console.items() if seen["errors"]} == {}
    assert any("INFO: " in line for line in console["main"]["other"]), "LiteRT's log lines were not seen at all"


def test_measure_keeps_the_page_responsive_shows_progress_and_can_be_cancelled(browser):
    timer = browser["measure_timer"]
    assert timer["ticks"] >= 3, f"a 50 ms page timer fired {timer['ticks']} times in Measure's {timer['ms']:.0f} ms"
    assert timer["max_gap_ms"] < 3000, timer  # copying the model for the worker stalls the page once, briefly
    for bucket in (32, 64):  # the timer fired, and progress was on screen, while each bucket's runs ran
        assert any(s.startswith(f"measuring bucket {bucket} ") and " of 3" in s for s in timer["statuses"]), timer
    assert timer["final_status"].startswith("measured buckets 32, 64"), timer
    cancel = browser["cancel"]
    assert cancel is not None, "Measure has no Cancel button"
    assert cancel["running"].startswith("measuring bucket "), cancel
    assert "cancelled" in cancel["cancelled"] and cancel["later"] == cancel["cancelled"], cancel  # no progress after
    assert not cancel["measuring"] and cancel["measured"] is None and not cancel["save_enabled"], cancel
    assert cancel["measure_enabled"] and cancel["cancel_hidden"], cancel


def test_measure_panel_exports_a_record_report_shows_beside_the_desktop(browser, tmp_path):
    from pocketbert.benchmarks import report, schema

    data = browser["measured"]
    assert data["schema"] == schema.SCHEMA and data["command"] == "browser"
    assert data["device"]["kind"] == "browser" and "Chrome" in data["device"]["user_agent"]
    assert data["device"]["hardware_concurrency"] >= 1
    assert [r["seq_len"] for r in data["results"]] == [32, 64]
    for record in data["results"]:
        assert schema.check_record(record) == [], record
        assert record["where"] == "browser" and record["runner"] == "tflite:fp32" and record["timed"]["runs"] == 3
    results = tmp_path / "results"
    results.mkdir()
    (results / "browser.json").write_text(json.dumps(data), encoding="utf-8")
    text = report.build(results, tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "## In a web browser" in text and "tflite:fp32" in text and data["device"]["user_agent"] in text


#: opens a bundle folder with the page's reader (the package's openBundle: manifest, artifact choice, size and
#: SHA-256 of every file it reads) and prints what it read
OPEN_FOLDER = """
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openBundle } from 'pocketbert';
const folder = process.argv[1];
const source = { describe: () => folder, read: async (name) => new Uint8Array(readFileSync(join(folder, name))) };
const b = await openBundle(source);
console.log(JSON.stringify({ recipe: b.artifact.recipe, file: b.artifact.file, bytes: b.model.length,
  labels: b.labels, vocab: b.vocab.length, pin: b.pin }));
"""


def _open_in_node(folder: Path) -> dict:
    done = subprocess.run(["node", "--input-type=module", "-e", OPEN_FOLDER, str(folder)], cwd=WEB,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_page_reads_a_bundle_cut_for_the_web(node_modules, cls_bundle, tmp_path):  # noqa: F811
    """A bundle cut for the web (one TFLite model, no ONNX, no tokenizer_config.json) builds into the page, and
    the page's reader opens it, every file verified, choosing the model it chooses in the full bundle."""
    web = cut(cls_bundle, "web", tmp_path / "web").path
    site = tmp_path / "site"
    done = subprocess.run(["node", str(WEB / "build.mjs"), "--out", str(site), "--classification", str(web)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    served = site / "bundles" / "classification"
    assert sorted(p.name for p in served.iterdir()) == ["labels.txt", "manifest.json", "model.int8-dynamic.tflite",
                                                        "vocab.txt"]
    read, full = _open_in_node(served), _open_in_node(cls_bundle)
    assert read["recipe"] == full["recipe"] == "tflite:int8-dynamic"
    assert {k: read[k] for k in ("file", "bytes", "labels", "vocab")} == {k: full[k] for k in ("file", "bytes",
                                                                                            "labels", "vocab")}
    assert read["pin"] == hashlib.sha256((web / "manifest.json").read_bytes()).hexdigest() != full["pin"]


def test_js_modules_pass_their_node_tests(node_modules):
    done = subprocess.run(["node", "--test", "test/"], cwd=WEB, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass " in done.stdout
