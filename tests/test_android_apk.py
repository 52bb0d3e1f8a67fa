"""The demo APK (android_demo/build_apk.sh): built here, checked as Android's own tools check an APK, and its page
run in Chromium exactly as packaged, under the app's origin, against the Python runtime.

The APK is built once per module from the browser tests' shared bundles (``web_bundles``: ner-phone and sst2-phone,
buckets 32 and 64, each with its int4 file) with a throw-away debug key. Checked: ``apksigner verify`` (v2 scheme),
``zipalign -c -p 4``, ``aapt2 dump badging`` (package, SDK levels, the launchable activity, no permission), the dex
holding the app's classes and nothing else (``dexdump``), androguard opening it, every bundle file inside equal to
the cut bundle (SHA-256) and stored uncompressed, LiteRT.js's single-threaded builds only; the app's asset serving
(``AssetRoutes``, plain Java) by its JUnit tests; then the page extracted from the APK, served to headless Chromium
at a phone's viewport by that same Java class behind a loopback server (every request the page makes, other origins'
included), gives the runtime's answers on dev sentences, and a Measure run started as the app's intent starts it
hands its record to the app's shell. What is not checked here: the APK on a phone or emulator (none is reachable).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pocketbert import debian_packages
from pocketbert.converter.output.cut import cut

from .test_web_demo import INT4_LOGIT_TOLERANCE, SEED, _conll_dev, _sst2_dev, _texts, demo_modules, int4_entities_agree
from .test_web_demo import chromium, web_bundles  # noqa: F401  (fixtures)

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "android_demo" / "webview"
DEV_SENTENCES = 60
APP_CLASSES = {"AssetRoutes", "AssetRoutes$AssetSource", "AssetRoutes$Response", "MainActivity",
               "MainActivity$Assets", "MainActivity$Client", "MainActivity$Shell", "PageQuery"}


def _tool(name: str, package: str) -> str:
    """A Debian tool the checks use, installed when missing and we are root (the build installs its own)."""
    path, _ = debian_packages.ensure_command(name, package, log=lambda line: print(line, file=sys.stderr),
                                             recommends=False)
    assert path, f"{name} not found: install it as root (apt-get install -y {package})"
    return path


def _run(*command, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, **kwargs)


@pytest.fixture(scope="module")
def built(web_bundles, tmp_path_factory):  # noqa: F811  (fixture imported above)
    """The APK built by the one command, and the bundles it was given."""
    demo_modules()  # the page's npm packages, installed once with the browser tests' lock
    work = tmp_path_factory.mktemp("apk")
    bundles = {"ner": web_bundles["ner_phone"], "classification": web_bundles["classification"]}
    out = work / "pocketbert-demo.apk"
    done = _run(REPO / "android_demo" / "build_apk.sh", "--ner", bundles["ner"], "--classification",
                bundles["classification"], "--out", out, "--keystore", work / "debug.keystore",
                env={**os.environ, "POCKETBERT_PYTHON": sys.executable})
    assert done.returncode == 0, f"build_apk.sh failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert f"wrote {out}" in done.stdout and "adb install -r" in done.stdout, done.stdout
    return {"apk": out, "bundles": bundles, "work": work, "log": done.stderr}


def test_the_apk_is_signed_and_aligned(built):
    verified = _run(_tool("apksigner", "apksigner"), "verify", "--verbose", built["apk"])
    assert verified.returncode == 0, verified.stderr
    assert "Verified using v2 scheme (APK Signature Scheme v2): true" in verified.stdout, verified.stdout
    aligned = _run(_tool("zipalign", "zipalign"), "-c", "-p", "4", built["apk"])
    assert aligned.returncode == 0, aligned.stdout + aligned.stderr
    assert not list(built["apk"].parent.glob(".*partial*")), "a partial APK was left beside the output"


def test_badging_names_the_package_its_sdks_and_launcher_and_no_permission(built):
    done = _run(_tool("aapt2", "aapt"), "dump", "badging", built["apk"])
    assert done.returncode == 0, done.stderr
    badging = done.stdout
    package = r"^package: name='pocketbert\.webview' versionCode='1' versionName='0\.1\.0'"
    assert re.search(package, badging, re.M), badging
    assert "sdkVersion:'24'" in badging and "targetSdkVersion:'34'" in badging, badging
    assert "launchable-activity: name='pocketbert.webview.MainActivity'" in badging, badging
    assert "application-debuggable" in badging, badging  # run-as reads the Measure record of a debug build
    assert "permission" not in badging, [line for line in badging.splitlines() if "permission" in line]


def test_the_dex_holds_the_apps_classes_and_nothing_else(built, tmp_path):
    with zipfile.ZipFile(built["apk"]) as z:
        assert [n for n in z.namelist() if n.endswith(".dex")] == ["classes.dex"]
        (tmp_path / "classes.dex").write_bytes(z.read("classes.dex"))
    done = _run(_tool("dexdump", "dexdump"), tmp_path / "classes.dex")
    assert done.returncode == 0, done.stderr
    found = set(re.findall(r"Class descriptor\s*:\s*'Lpocketbert/webview/([^;']+);'", done.stdout))
    every = re.findall(r"Class descriptor\s*:\s*'([^']+)'", done.stdout)
    assert found == APP_CLASSES and len(every) == len(APP_CLASSES), every


def test_androguard_opens_it(built):
    _tool("androguard", "androguard")
    # Debian's androguard is a module of the system Python, not of the project's environment
    seen = _androguard(built["apk"])
    pins = seen.pop("pins")
    assert seen == {"valid": True, "package": "pocketbert.webview", "main": "pocketbert.webview.MainActivity",
                    "permissions": [], "min": "24", "v2": True}, seen
    # the pins the activity hands the page: each bundle's, as the cut inside the APK has it
    with zipfile.ZipFile(built["apk"]) as z:
        assert pins == {f"pocketbert.{task}_pin": _sha(z.read(f"assets/www/bundles/{task}/manifest.json"))
                        for task in ("ner", "classification")}, pins


def _androguard(apk: Path) -> dict:
    """What Debian's androguard (a module of the system Python, not of the project's environment) reads."""
    script = ("import json, sys\nfrom androguard.core.bytecodes.apk import APK\na = APK(sys.argv[1])\n"
              "ns = '{http://schemas.android.com/apk/res/android}'\n"
              "meta = a.get_android_manifest_xml().iter('meta-data')\n"
              "pins = {m.get(ns + 'name'): m.get(ns + 'value') for m in meta}\n"
              "print(json.dumps({'valid': a.is_valid_APK(), 'package': a.get_package(), 'main': a.get_main_activity(),"
              " 'permissions': a.get_permissions(), 'min': a.get_min_sdk_version(), 'v2': a.is_signed_v2(),"
              " 'pins': pins}))")
    done = _run("/usr/bin/python3", "-c", script, apk)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_every_bundle_file_inside_equals_the_cut_bundle_and_models_are_stored(built, tmp_path):
    with zipfile.ZipFile(built["apk"]) as z:
        entries = {i.filename: i for i in z.infolist()}
        for task, source in built["bundles"].items():
            reference = cut(source, "web", tmp_path / task).path
            inside = {n.rsplit("/", 1)[1]: n for n in entries if n.startswith(f"assets/www/bundles/{task}/")}
            # what the page reads (it tokenizes from vocab.txt; tokenizer.json stays out)
            assert sorted(inside) == ["labels.txt", "manifest.json", "model.int4-dynamic.tflite", "vocab.txt"], inside
            for name, entry in inside.items():
                assert _sha(z.read(entry)) == _sha((reference / name).read_bytes()), (task, name)
            manifest = json.loads(z.read(inside["manifest.json"]))
            models = [a["file"] for a in manifest["artifacts"]]
            assert models == ["model.int4-dynamic.tflite"], (task, models)  # the page's own default choice
            for model in models:
                assert entries[inside[model]].compress_type == zipfile.ZIP_STORED, (task, model)
        wasm = sorted(n.rsplit("/", 1)[1] for n in entries if n.startswith("assets/www/pocketbert-wasm/"))
        assert wasm == ["litert_wasm_compat_internal.js", "litert_wasm_compat_internal.wasm",
                        "litert_wasm_internal.js", "litert_wasm_internal.wasm"], wasm
        for name in wasm:  # LiteRT.js's own files, as the npm package ships them
            assert z.read(f"assets/www/pocketbert-wasm/{name}") == (REPO / "web" / "wasm" / name).read_bytes(), name


@pytest.fixture(scope="module")
def junit(tmp_path_factory):
    """run_tests.sh once: (its completed process, the compiled classes: the app's as in the APK, and AssetServer)."""
    classes = tmp_path_factory.mktemp("webview-classes")
    return _run(APP / "run_tests.sh", "--classes", classes), classes


def test_the_apps_asset_serving_passes_its_junit_tests(junit):
    done, _ = junit
    lines = done.stdout.strip().splitlines()
    summary = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1]) if lines else None
    assert summary and done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert int(summary.group(1)) >= 40 and summary.group(2) == "0", lines[-1]


@pytest.fixture(scope="module")
def page(built, junit, chromium, tmp_path_factory):  # noqa: F811  (fixture imported above)
    """What the page extracted from the APK showed and computed in Chromium (apk_page_check.mjs's JSON)."""
    work = tmp_path_factory.mktemp("apk-page")
    with zipfile.ZipFile(built["apk"]) as z:
        z.extractall(work / "apk", [n for n in z.namelist() if n.startswith("assets/")])
    done, classes = junit
    assert done.returncode == 0, f"the app's Java did not compile or pass its tests:\n{done.stderr[-3000:]}"
    server = subprocess.Popen(["java", "-cp", f"{classes / 'main'}:{classes / 'test'}",
                               "pocketbert.webview.AssetServer", str(work / "apk" / "assets")],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        texts = {"ner": _texts() + _conll_dev(DEV_SENTENCES), "classification": _texts() + _sst2_dev(DEV_SENTENCES)}
        pins = _androguard(built["apk"])["pins"]
        # the query PageQuery builds from those pins (its JUnit tests hold the format)
        query = "?shell=android" + "".join(f"&{task}_pin={pins[f'pocketbert.{task}_pin']}"
                                           for task in ("ner", "classification"))
        spec = {"chromium": chromium, "user_data_dir": str(work / "profile"),
                "origin": "https://appassets.androidplatform.net",
                "server": f"http://127.0.0.1:{port}", "screenshot": str(work / "apk-ner.png"), "texts": texts,
                "query": query, "wrong_pin_query": f"?shell=android&ner_pin={'0' * 64}"}
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        done = _run("node", APP / "tools" / "apk_page_check.mjs", work / "spec.json", work / "out.json")
        assert done.returncode == 0, f"the browser run failed:\n{done.stderr[-4000:]}"
    finally:
        server.terminate()
        server.wait(timeout=30)
    out = json.loads((work / "out.json").read_text(encoding="utf-8"))
    return {**out, "classification_buckets": out["classification"]["buckets"], "spec": spec, "work": work}


def test_the_page_runs_under_the_apps_origin_and_tags_the_seed_sentence(page):
    seed = page["seed"]
    assert seed["error"] is None and seed["text"] == SEED, seed
    found = [(e["entity_group"], SEED[e["start"]:e["end"]]) for e in seed["entities"]]
    assert found == [("PER", "Jeff Dean"), ("ORG", "Google"), ("LOC", "California")], found
    assert seed["marks"] == ["Jeff Dean", "Google", "California"]
    assert seed["origin"] == "https://appassets.androidplatform.net" and seed["secure"] and not seed["isolated"]
    # the page says which LiteRT.js build ran: the single-threaded relaxed-SIMD one, the app ships no threaded build
    assert "tflite:int4-dynamic" in seed["bundle"] and "LiteRT.js litert_wasm_internal.js (relaxed-simd, 1 thread)" \
        in seed["bundle"], seed["bundle"]
    assert page["spec"]["query"].split("ner_pin=")[1][:64] in seed["bundle"]  # the pinned bundle is the one shown
    # laid out for the phone: nothing wider than the screen, no drop zone (the WebView has no drag and drop)
    assert seed["viewport_width"] == 412 and seed["page_width"] <= 412 and seed["text_box_width"] > 300, seed
    assert not seed["drop_shown"]
    shot = Path(page["spec"]["screenshot"])
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_a_bundle_that_is_not_the_pinned_one_is_refused_visibly(page):
    wrong = page["wrong_pin"]
    assert wrong["error"] and "0" * 64 in wrong["error"] and "Fix:" in wrong["error"], wrong
    assert wrong["highlighted"] == "", "nothing may be shown from a refused bundle"


def test_every_request_is_answered_by_the_app_with_its_headers(page):
    origin = page["spec"]["origin"]
    assert page["requests"] and all(url.startswith(origin + "/") for url in page["requests"]), page["requests"]
    responses = page["responses"]
    for path in ("litert_wasm_internal.js", "litert_wasm_internal.wasm"):  # both pages', and the Measure worker's
        assert page["requests"].count(f"{origin}/pocketbert-wasm/{path}") == 3, page["requests"]
    wasm = responses[f"{origin}/pocketbert-wasm/litert_wasm_internal.wasm"]
    assert wasm["status"] == 200 and wasm["headers"]["content-type"] == "application/wasm", wasm
    index = responses[f"{origin}/index.html"]
    assert index["headers"]["content-type"] == "text/html; charset=utf-8", index
    for response in responses.values():
        assert "script-src 'self' 'wasm-unsafe-eval'" in response["headers"]["content-security-policy"], response
        assert response["headers"]["x-content-type-options"] == "nosniff", response
    # another origin is refused by the app's Content-Security-Policy before any request is made (AssetRoutes would
    # answer 403: its JUnit tests); a file of an unknown kind and a missing one are 404
    reach = page["reach"]
    assert str(reach["other_origin"]).startswith("refused") and reach["unknown_kind"] == reach["missing"] == 404, reach


def test_no_page_logs_a_console_error(page):
    """Under the app's Content-Security-Policy nothing the page needs is blocked and nothing fails: the only errors
    are the refusals the test asked for itself (the other origin, an unknown kind of file, a missing one)."""
    errors = {label: seen["errors"] for label, seen in page["console"].items()}
    asked = [e for e in errors["main"] if "https://example.com/model.tflite" in e
             or e == "Failed to load resource: the server responded with a status of 404 (Not Found)"]
    assert len(asked) == 4 and any("Content Security Policy" in e for e in asked), errors["main"]
    errors["main"] = [e for e in errors["main"] if e not in asked]
    assert errors == {"main": [], "measure": [], "wrong_pin": []}, errors


def test_the_apps_ner_answers_equal_the_runtimes(page, built):
    from pocketbert import runtime

    got = page["ner"]
    assert got["artifact"] == "tflite:int4-dynamic", got["artifact"]
    ner = runtime.load(built["bundles"]["ner"], "tflite", precision="int4-dynamic", threads=1)
    int4_entities_agree(ner, page["spec"]["texts"]["ner"], got["rows"])


def test_the_apps_labels_equal_the_runtimes(page, built):
    from pocketbert import runtime
    from pocketbert.runtime import batching
    from pocketbert.runtime.classification import TruncationWarning

    got = page["classification"]
    assert got["artifact"] == "tflite:int4-dynamic", got["artifact"]
    int4 = runtime.load(built["bundles"]["classification"], "tflite", precision="int4-dynamic", threads=1)
    ties = 0
    for text, row in zip(page["spec"]["texts"]["classification"], got["rows"], strict=True):
        ids = int4.encoder.encode([(text, None)])[0].ids
        assert row["input_ids"] == ids, text
        feeds = batching.pad([(ids, [0] * len(ids))], int4.bundle.input_names, int4.encoder.pad_id)
        expected = np.asarray(int4.backend.run(feeds), np.float64).reshape(-1)
        assert float(np.abs(np.asarray(row["logits"]) - expected).max()) <= INT4_LOGIT_TOLERANCE, (text, row["logits"])
        top2 = np.sort(expected)[-2:]
        if top2[1] - top2[0] < 2 * INT4_LOGIT_TOLERANCE:
            ties += 1
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TruncationWarning)
            labels = int4(text, top_k=None)
        assert [g["label"] for g in row["labels"]] == [e["label"] for e in labels], text
    assert ties <= len(got["rows"]) // 10, f"{ties} near ties"
    shown = page["classification_shown"]
    assert "sst2-phone (classification)" in shown["bundle"] and sorted(shown["labels"]) == ["negative", "positive"]


def test_measure_started_by_the_intent_hands_its_record_to_the_app(page):
    record = json.loads(page["measure"]["shell"])
    assert "error" not in record, record
    assert record["command"] == "browser" and record["device"]["kind"] == "browser", record
    rows = record["results"]
    buckets = page["classification_buckets"]  # every bucket of the model, each timed
    assert [r["seq_len"] for r in rows] == buckets and len(buckets) >= 2, rows
    assert all(r["runner"] == "tflite:int4-dynamic" and r["timed"]["p50_ms"] > 0 and r["timed"]["runs"] == 2
               for r in rows), rows
    assert page["measure"]["status"].startswith(f"measured buckets {', '.join(map(str, buckets))} (1 warm-up and "
                                                "2 timed runs each)"), page["measure"]


def _build(tmp_path: Path, *args) -> subprocess.CompletedProcess:
    return _run(REPO / "android_demo" / "build_apk.sh", *args, "--keystore", tmp_path / "k.keystore",
                env={**os.environ, "POCKETBERT_PYTHON": sys.executable})


def test_a_tampered_bundle_is_refused_before_anything_is_packaged(built, tmp_path):
    tampered = tmp_path / "tampered"
    shutil.copytree(built["bundles"]["ner"], tampered)
    model = tampered / "model.int4-dynamic.tflite"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 1
    model.write_bytes(bytes(data))
    out = tmp_path / "demo.apk"
    done = _build(tmp_path, "--ner", tampered, "--classification", built["bundles"]["classification"], "--out", out)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "Error: " in done.stderr and "Fix: " in done.stderr, done.stderr
    assert "model.int4-dynamic.tflite" in done.stderr, done.stderr
    assert not out.exists() and not (tmp_path / "k.keystore").exists()


@pytest.mark.parametrize("case", ["swapped", "not a bundle", "exists"])
def test_unusable_inputs_are_refused_with_the_fix(built, tmp_path, case):
    ner, cls = built["bundles"]["ner"], built["bundles"]["classification"]
    out = tmp_path / "demo.apk"
    if case == "swapped":
        args, expected = ["--ner", cls, "--classification", ner], "is a classification bundle, not ner"
    elif case == "not a bundle":
        args, expected = ["--ner", tmp_path, "--classification", cls], "is not a bundle (no manifest.json)"
    else:
        out.write_text("mine", encoding="utf-8")
        args, expected = ["--ner", ner, "--classification", cls], "exists"
    done = _build(tmp_path, *args, "--out", out)
    assert done.returncode == 2 and expected in done.stderr and "Fix: " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert (out.read_text(encoding="utf-8") == "mine") if case == "exists" else not out.exists()


def _build_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_apk", APP / "build_apk.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_apk"] = module  # its dataclasses look their module up while they are made
    spec.loader.exec_module(module)
    return module


def test_an_android_sdk_in_android_home_is_preferred_newest_first(tmp_path, monkeypatch):
    """With ANDROID_HOME holding build-tools and a platform, the SDK's d8, aapt2, zipalign, apksigner and newest
    android.jar are used (no SDK is installed here: the folder has the SDK's layout and empty tools)."""
    build = _build_module()
    for version in ("30.0.3", "34.0.0", "9.0.0"):
        for tool in ("aapt2", "zipalign", "apksigner", "d8"):
            (tmp_path / "build-tools" / version).mkdir(parents=True, exist_ok=True)
            (tmp_path / "build-tools" / version / tool).touch()
    for level in ("android-9", "android-34", "android-28"):
        (tmp_path / "platforms" / level).mkdir(parents=True)
        (tmp_path / "platforms" / level / "android.jar").touch()
    monkeypatch.setenv("ANDROID_HOME", str(tmp_path))
    tools = build.find_tools()
    assert tools.aapt2 == str(tmp_path / "build-tools" / "34.0.0" / "aapt2")
    assert tools.platform_jar == tools.link_base == tmp_path / "platforms" / "android-34" / "android.jar"
    assert tools.dex[:3] == [str(tmp_path / "build-tools" / "34.0.0" / "d8"), "--min-api", "24"]
    (tmp_path / "build-tools" / "34.0.0" / "d8").unlink()  # an incomplete SDK is not used
    assert build.find_tools().source.startswith("Debian's")
