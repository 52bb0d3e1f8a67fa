"""Build the PocketBERT demo APK: the web demo in a WebView, both bundles inside, signed and aligned.

    android_demo/build_apk.sh [--ner BUNDLE] [--classification BUNDLE] [--out APK] [--overwrite] [--keystore FILE]

Stages, each one's output checked before the next:
  1. the bundles are cut for the web (``pocketbert-convert cut --target web``: one TFLite file each, checked
     against its manifest, as the runtime checks a bundle) and the page is built around them (web_demo/build.mjs);
  2. the app's Java (webview/src/main/java) is compiled against an Android platform jar and dexed;
  3. the manifest is linked with aapt2, classes.dex and the page's folder (as assets/www/) added, models stored
     uncompressed so that they are read in place;
  4. the APK is aligned (zipalign -p 4) and signed with a debug key (apksigner), then verified.

Tools: the Android SDK's when ``ANDROID_HOME`` has them (build-tools' d8, aapt2, zipalign, apksigner and a platform's
android.jar); otherwise Debian's packages (aapt, android-framework-res, zipalign, apksigner; installed when missing and
run as root) with ``dx.jar`` and ``android-28.jar`` from ../shared/android beside the repository (or
``$POCKETBERT_ANDROID_JARS``). The debug key is the SDK's own convention (~/.android/debug.keystore, created when
missing), so an APK built here installs over one built by Gradle on the same machine.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WEB_DEMO = REPO / "web_demo"
PACKAGE = "pocketbert.webview"
MIN_SDK = 24  # Android 7: the first with an updatable WebView able to run WebAssembly SIMD after updates
TARGET_SDK = 34
#: LiteRT.js builds the page needs in a WebView: relaxed SIMD (current WebViews) and the compatible one (older
#: ones). The threaded build needs a cross-origin isolated page, which the app's WebView never is.
WASM_BUILDS = ("litert_wasm_internal", "litert_wasm_compat_internal")
#: assets stored, not deflated: read in place from the APK (the models are most of its bytes)
STORED = (".tflite",)
DEBIAN = {"aapt2": "aapt", "zipalign": "zipalign", "apksigner": "apksigner"}
FRAMEWORK_RES = Path("/usr/share/android-framework-res/framework-res.apk")


class BuildError(Exception):
    """A problem the user can fix: printed as the problem and the fix, never a traceback."""

    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


@dataclass
class Tools:
    aapt2: str
    zipalign: str
    apksigner: str
    platform_jar: Path  # compile class path only, never packaged
    link_base: Path  # aapt2 link -I: the platform's resources
    dex: list[str]  # command prefix that writes classes.dex: d8 or java -jar dx.jar
    source: str  # where they came from, for the summary


def _run(command: list, what: str, fix: str, cwd: Path | None = None) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise BuildError(f"{what} failed (exit code {done.returncode}):\n{tail}", fix)
    return done.stdout


def _sdk_tools(home: Path) -> Tools | None:
    """The newest build-tools and platform in an Android SDK, if it has all the pieces."""
    def newest(folder: Path, pattern: str) -> Path | None:
        found = sorted((p for p in folder.glob(pattern) if p.is_dir()),
                       key=lambda p: [int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", p.name.split("-")[-1])])
        return found[-1] if found else None

    build = newest(home / "build-tools", "*")
    platform = newest(home / "platforms", "android-*")
    if build is None or platform is None or not (platform / "android.jar").is_file():
        return None
    names = {name: build / name for name in ("aapt2", "zipalign", "apksigner", "d8")}
    if not all(path.exists() for path in names.values()):
        return None
    return Tools(str(names["aapt2"]), str(names["zipalign"]), str(names["apksigner"]), platform / "android.jar",
                 platform / "android.jar", [str(names["d8"]), "--min-api", str(MIN_SDK)],
                 f"Android SDK {home} (build-tools {build.name}, {platform.name})")


def _install_debian(missing: list[str]) -> None:
    packages = sorted({DEBIAN.get(name, name) for name in missing})
    command = f"apt-get install -y {' '.join(packages)}"
    try:
        from pocketbert import debian_packages
    except ImportError:
        debian_packages = None
    if debian_packages is None or not debian_packages.can_install():
        raise BuildError(f"{', '.join(missing)} not found, and no Android SDK in ANDROID_HOME",
                         f"install Debian's packages as root ({command}), or set ANDROID_HOME to an Android SDK "
                         "with build-tools and a platform")
    for package in packages:
        failed = debian_packages.install(package, lambda p=package: _debian_present(p), log=_say)
        if failed:
            raise BuildError(f"Debian's {package} could not be installed: {failed}", f"install it as root: {command}")


def _debian_present(package: str) -> bool:
    if package == "android-framework-res":
        return FRAMEWORK_RES.is_file()
    return shutil.which({"aapt": "aapt2"}.get(package, package)) is not None


def _jars() -> Path:
    return Path(os.environ.get("POCKETBERT_ANDROID_JARS") or REPO.parent / "shared" / "android")


def find_tools() -> Tools:
    home = os.environ.get("ANDROID_HOME") or os.environ.get("ANDROID_SDK_ROOT")
    if home and (tools := _sdk_tools(Path(home))):
        return tools
    missing = [name for name in DEBIAN if shutil.which(name) is None]
    if not FRAMEWORK_RES.is_file():
        missing.append("android-framework-res")
    if missing:
        _install_debian(missing)
    jars = _jars()
    dx, platform = jars / "dx.jar", jars / "android-28.jar"
    for jar in (dx, platform):
        if not jar.is_file():
            raise BuildError(f"{jar} not found: without an Android SDK the build compiles against android-28.jar "
                             "and dexes with dx.jar", f"put both jars in {jars} (see its README), set "
                             "POCKETBERT_ANDROID_JARS to their folder, or set ANDROID_HOME to an Android SDK")
    return Tools(shutil.which("aapt2"), shutil.which("zipalign"), shutil.which("apksigner"), platform, FRAMEWORK_RES,
                 ["java", "-jar", str(dx), "--dex", f"--min-sdk-version={MIN_SDK}"],
                 f"Debian's aapt2, zipalign and apksigner; {dx.name} and {platform.name} from {jars}")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _check_prerequisites() -> None:
    for tool, package in (("java", "openjdk-17-jdk-headless"), ("javac", "openjdk-17-jdk-headless"),
                          ("keytool", "openjdk-17-jdk-headless"), ("node", "nodejs"), ("npm", "npm")):
        if shutil.which(tool) is None:
            raise BuildError(f"{tool} not found", f"install it (Debian: apt-get install -y {package})")


def cut_bundles(bundles: dict[str, Path], work: Path) -> dict[str, tuple[Path, str]]:
    """Each bundle cut for the web into work/cut/<task>, with its pin; a bundle the runtime would refuse is refused
    here."""
    from pocketbert.converter.output.cut import cut
    from pocketbert.runtime.bundle import Bundle
    from pocketbert.runtime.errors import Error

    cuts = {}
    for task, source in bundles.items():
        try:
            found = Bundle.open(source).manifest.get("task")
            if found != task:
                raise BuildError(f"{source} is a {found} bundle, not {task}",
                                 f"pass it as --{found}, or pass a {task} bundle as --{task}")
            result = cut(source, "web", work / "cut" / task)
        except Error as err:
            raise BuildError(f"{source}: {err.problem}", err.fix or "convert the bundle again") from None
        _say(f"cut {source} for the web: {', '.join(a.recipe for a in result.kept)}, "
             f"{result.bytes_after / 1e6:.1f} MB, pin sha256 {result.pin}")
        cuts[task] = (result.path, result.pin)
    return cuts


def _npm_ready() -> None:
    """The page's node_modules (and the package's LiteRT.js files), installed with npm ci when missing."""
    for folder, needed in ((REPO / "web", "@litertjs/core"), (WEB_DEMO, "esbuild")):
        if not (folder / "node_modules" / needed).is_dir():
            _say(f"npm ci in {folder.name}/")
            _run(["npm", "ci", "--no-audit", "--no-fund"], f"npm ci in {folder}", "run it by hand to see why",
                 cwd=folder)
    if not (REPO / "web" / "wasm" / "litert_wasm_internal.wasm").is_file():
        _run(["npm", "run", "prepare"], "npm run prepare in web/", "run it by hand in web/ to see why",
             cwd=REPO / "web")


def build_page(cuts: dict[str, tuple[Path, str]], assets: Path) -> Path:
    """The web demo with both bundles in assets/www, LiteRT.js's threaded build left out."""
    _npm_ready()
    www = assets / "www"
    args = [a for task, (path, _) in cuts.items() for a in (f"--{task}", path)]
    _run(["node", WEB_DEMO / "build.mjs", "--out", www, *args],
         "building the page (web_demo/build.mjs)", "run node web_demo/build.mjs by hand to see why")
    wasm = www / "pocketbert-wasm"
    for file in list(wasm.iterdir()):
        if not file.name.startswith(tuple(f"{b}." for b in WASM_BUILDS)):
            file.unlink()
    have = sorted(f.name for f in wasm.iterdir())
    want = sorted(f"{b}.{ext}" for b in WASM_BUILDS for ext in ("js", "wasm"))
    if have != want:
        raise BuildError(f"the page's LiteRT.js files are {have}, expected {want}",
                         "reinstall the web package (cd web && npm ci && npm run prepare)")
    return www


def compile_java(tools: Tools, work: Path) -> Path:
    classes = work / "classes"
    classes.mkdir()
    sources = sorted((HERE / "src" / "main" / "java").rglob("*.java"))
    # Java 8 class files: what dx reads (d8 reads them too)
    _run(["javac", "--release", "8", "-Xlint:all,-options", "-Werror", "-encoding", "UTF-8",
          "-classpath", tools.platform_jar, "-d", classes, *sources],
         "compiling the app's Java", "fix the compiler's error above")
    dex = work / "dex"
    dex.mkdir()
    class_files = sorted(classes.rglob("*.class"))
    if tools.dex[0] == "java":
        _run([*tools.dex, f"--output={dex / 'classes.dex'}", classes], "dexing (dx)", "fix the error above")
    else:
        _run([*tools.dex, "--output", dex, *class_files], "dexing (d8)", "fix the error above")
    return dex / "classes.dex"


def pinned_manifest(pins: dict[str, str], work: Path) -> Path:
    """The app's manifest with each bundle's pin as application meta-data, which the activity hands to the page."""
    text = (HERE / "AndroidManifest.xml").read_text(encoding="utf-8")
    entries = "".join(f'        <meta-data android:name="pocketbert.{task}_pin" android:value="{pin}" />\n'
                      for task, pin in sorted(pins.items()))
    if text.count("    </application>") != 1:
        raise BuildError("webview/AndroidManifest.xml has no single </application> to add the pins before",
                         "restore the manifest from the repository")
    out = work / "AndroidManifest.xml"
    out.write_text(text.replace("    </application>", entries + "    </application>"), encoding="utf-8")
    return out


def link(tools: Tools, work: Path, manifest: Path) -> Path:
    """The manifest and resources linked against the platform: an APK holding no code or assets yet."""
    res = work / "res.zip"
    _run([tools.aapt2, "compile", "--dir", HERE / "res", "-o", res], "compiling resources (aapt2 compile)",
         "fix the resource named above")
    linked = work / "linked.apk"
    _run([tools.aapt2, "link", "-I", tools.link_base, "--manifest", manifest,
          "--min-sdk-version", MIN_SDK, "--target-sdk-version", TARGET_SDK, "--debug-mode", "-o", linked, res],
         "linking (aapt2 link)", "fix the manifest or resource named above")
    return linked


def add_code_and_assets(apk: Path, dex: Path, assets: Path) -> None:
    """classes.dex and every file of ``assets`` (as assets/…), models stored, the rest deflated; fixed timestamps,
    so the same inputs give the same entries."""
    def add(z: zipfile.ZipFile, source: Path, name: str) -> None:
        entry = zipfile.ZipInfo(name, date_time=(1981, 1, 1, 0, 0, 0))
        entry.compress_type = zipfile.ZIP_STORED if name.endswith(STORED) else zipfile.ZIP_DEFLATED
        entry.external_attr = 0o644 << 16
        with source.open("rb") as data, z.open(entry, "w") as out:
            shutil.copyfileobj(data, out, 1 << 20)

    with zipfile.ZipFile(apk, "a") as z:
        add(z, dex, "classes.dex")
        for file in sorted(p for p in assets.rglob("*") if p.is_file()):
            add(z, file, f"assets/{file.relative_to(assets).as_posix()}")


def debug_keystore(path: Path) -> Path:
    """The SDK's debug key (alias androiddebugkey, passwords android), created as the SDK creates it."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        _run(["keytool", "-genkeypair", "-keystore", path, "-storepass", "android", "-alias", "androiddebugkey",
              "-keypass", "android", "-keyalg", "RSA", "-keysize", "2048", "-validity", "10000",
              "-dname", "CN=Android Debug,O=Android,C=US"], "creating the debug key (keytool)",
             f"check that {path.parent} is writable, or pass --keystore")
        _say(f"created the debug key {path}")
    return path


def sign(tools: Tools, unsigned: Path, keystore: Path, out: Path) -> None:
    aligned = unsigned.with_name("aligned.apk")
    _run([tools.zipalign, "-p", "-f", "4", unsigned, aligned], "aligning (zipalign)", "fix the error above")
    # no v4 signature: its .idsig file would be left beside the APK, and only incremental installs read it
    _run([tools.apksigner, "sign", "--ks", keystore, "--ks-pass", "pass:android", "--ks-key-alias",
          "androiddebugkey", "--key-pass", "pass:android", "--v4-signing-enabled", "false", "--out", out, aligned],
         "signing (apksigner)",
         f"check the debug key {keystore} (alias androiddebugkey, password android), or pass another --keystore")
    _run([tools.apksigner, "verify", out], "verifying the signature (apksigner verify)", "build again")
    _run([tools.zipalign, "-c", "-p", "4", out], "checking the alignment (zipalign -c)", "build again")


def _refuse_out(out: Path, overwrite: bool) -> None:
    if out.suffix != ".apk":
        raise BuildError(f"--out {out} does not end in .apk", "name the output file NAME.apk")
    if out.is_dir():
        raise BuildError(f"--out {out} is a folder", "name a file: --out FOLDER/pocketbert-demo.apk")
    if out.exists() and not overwrite:
        raise BuildError(f"{out} exists", "pass --overwrite to replace it, or choose another --out")
    if out.exists() and not zipfile.is_zipfile(out):
        raise BuildError(f"{out} exists and is not an APK: it is not replaced", "choose another --out")
    if not out.parent.is_dir():
        raise BuildError(f"the folder of --out, {out.parent}, does not exist", "create it first")


def build(bundles: dict[str, Path], out: Path, keystore: Path, overwrite: bool = False) -> Path:
    _refuse_out(out, overwrite)
    for task, path in bundles.items():
        if not (path / "manifest.json").is_file():
            raise BuildError(f"{path} is not a bundle (no manifest.json)",
                             f"convert one first (README, set-up command 1 writes bundles/ner-phone and "
                             f"bundles/sst2-phone), or pass --{task} BUNDLE")
    _check_prerequisites()
    tools = find_tools()
    with tempfile.TemporaryDirectory(prefix="pocketbert-apk-") as tmp:
        work = Path(tmp)
        assets = work / "assets"
        assets.mkdir()
        cuts = cut_bundles(bundles, work)
        build_page(cuts, assets)
        dex = compile_java(tools, work)
        apk = link(tools, work, pinned_manifest({task: pin for task, (_, pin) in cuts.items()}, work))
        add_code_and_assets(apk, dex, assets)
        signed = work / "signed.apk"
        sign(tools, apk, debug_keystore(keystore), signed)
        # copied beside the output, then renamed over it: the --out file is never half written
        partial = out.with_name(f".{out.name}.partial-{os.getpid()}")
        try:
            shutil.copyfile(signed, partial)
            partial.replace(out)
        finally:
            partial.unlink(missing_ok=True)
    _say(f"tools: {tools.source}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="android_demo/build_apk.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ner", type=Path, default=REPO / "bundles" / "ner-phone", help="NER bundle")
    parser.add_argument("--classification", type=Path, default=REPO / "bundles" / "sst2-phone",
                        help="classification bundle")
    parser.add_argument("--out", type=Path, default=Path("pocketbert-demo.apk"), help="the APK to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out APK")
    parser.add_argument("--keystore", type=Path, default=Path.home() / ".android" / "debug.keystore",
                        help="debug keystore (created when missing; alias androiddebugkey, password android)")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    try:
        out = build({"ner": args.ner.resolve(), "classification": args.classification.resolve()},
                    args.out.resolve(), args.keystore, args.overwrite)
    except BuildError as err:
        print(f"Error: {err.problem}\nFix: {err.fix}", file=sys.stderr)
        return 2
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, sha256 {digest}) in {time.monotonic() - t0:.0f} s; "
          f"install it with: adb install -r {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
