#!/usr/bin/env bash
# Compile PocketBERT's Android core (plain Java, language level 11) and its JUnit 5 tests with javac,
# run them with the JUnit console launcher, and print "N passed, N failed" as the last line; the exit
# code is non-zero when anything failed or could not run.
#
#   android_demo/core/run_tests.sh [--work-dir DIR] [--fuzz-count N] [--sst2-phone BUNDLE]
#
# The tests compare Java with the Python runtime, so their inputs come from the repository's Python
# (.venv/bin/python, or $POCKETBERT_PYTHON): the golden vectors in tests/golden, the vocabulary they
# were written with, random texts tokenized by the runtime (tools/make_fuzz_cases.py; --fuzz-count
# single texts per tokenizer) and two converted TFLite bundles with the runtime's results on them
# (tools/make_pipeline_cases.py; --sst2-phone: an sst2-phone bundle already converted, buckets 32 and 64
# with its int4 file, used instead of converting one). Generated files go to --work-dir (default: a
# temporary directory, removed afterwards); nothing generated is committed. A test whose input could not be generated
# fails and says why. JUnit 5 comes from Debian (apt-get install junit5), installed here if missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work=""
fuzz_count=2500
sst2_phone=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --work-dir) work="$2"; shift 2 ;;
        --fuzz-count) fuzz_count="$2"; shift 2 ;;
        --sst2-phone) sst2_phone=(--sst2-phone "$(cd "$2" && pwd)"); shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "run_tests.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "run_tests.sh: $*" >&2; exit 2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# --- Java and JUnit ---------------------------------------------------------------------------------
command -v javac >/dev/null && command -v java >/dev/null \
    || die "javac/java not found: install a JDK 17 (Debian: apt-get install -y openjdk-17-jdk-headless)"
launcher=/usr/share/java/junit-platform-console-standalone.jar
if [[ ! -f "$launcher" ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        echo "JUnit 5 console launcher missing: apt-get install -y junit5" >&2
        export DEBIAN_FRONTEND=noninteractive
        # one apt-get at a time with the suite's other installs (pocketbert/debian_packages.py takes this lock)
        apt() { flock "${TMPDIR:-/tmp}/pocketbert-apt.lock" apt-get -o DPkg::Lock::Timeout=900 "$@"; }
        apt install -y -q junit5 >&2 || { apt update -q >&2 && apt install -y -q junit5 >&2; } \
            || die "apt-get install junit5 failed"
    fi
    [[ -f "$launcher" ]] || die "$launcher not found: install JUnit 5 (Debian: sudo apt-get install -y junit5)"
fi

if [[ -z "$work" ]]; then
    work="$(mktemp -d -t pocketbert-core-tests.XXXXXX)"
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"

# --- test inputs from the Python runtime --------------------------------------------------------------
python="${POCKETBERT_PYTHON:-$repo/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3 || true)"
props=("-Dpocketbert.golden=$repo/tests/golden")
if [[ -z "$python" ]]; then
    echo "run_tests.sh: no Python found: the tests that compare with the Python runtime will fail" >&2
else
    t0="$(now)"
    if vocab="$(cd "$repo" && "$python" -c 'from pocketbert.converter.builtin import BUILTIN; print(BUILTIN["minilm"].path() / "vocab.txt")')"; then
        props+=("-Dpocketbert.vocab=$vocab")
    else
        echo "run_tests.sh: cannot locate the golden vocabulary (pip install -e '.[test]' first)" >&2
    fi
    if (cd "$repo" && "$python" "$here/tools/make_fuzz_cases.py" "$work/fuzz.jsonl" --count "$fuzz_count") >&2; then
        props+=("-Dpocketbert.fuzz=$work/fuzz.jsonl")
    else
        echo "run_tests.sh: make_fuzz_cases.py failed: the fuzz test will fail" >&2
    fi
    if (cd "$repo" && "$python" "$here/tools/make_pipeline_cases.py" "$work/pipeline" "${sst2_phone[@]}") >"$work/pipeline.log" 2>&1; then
        grep -E '^wrote ' "$work/pipeline.log" >&2 || true
        props+=("-Dpocketbert.pipeline=$work/pipeline")
    else
        tail -n 30 "$work/pipeline.log" >&2
        echo "run_tests.sh: make_pipeline_cases.py failed: the bundle and pipeline tests will fail" >&2
    fi
    echo "test inputs generated in $(since "$t0")" >&2
fi

# --- compile ----------------------------------------------------------------------------------------
t0="$(now)"
rm -rf "$work/classes"
mkdir -p "$work/classes/main" "$work/classes/test"
find "$here/src/main/java" -name '*.java' >"$work/main-sources.txt"
find "$here/src/test/java" -name '*.java' >"$work/test-sources.txt"
javac --release 11 -encoding UTF-8 -Xlint:all -Werror -d "$work/classes/main" @"$work/main-sources.txt" \
    || die "the core does not compile"
cp -R "$here/src/main/resources/." "$work/classes/main/"
javac --release 11 -encoding UTF-8 -Xlint:all -Werror -cp "$work/classes/main:$launcher" -d "$work/classes/test" \
    @"$work/test-sources.txt" || die "the tests do not compile"
echo "compiled $(wc -l <"$work/main-sources.txt") core and $(wc -l <"$work/test-sources.txt") test sources in $(since "$t0")" >&2

# --- run --------------------------------------------------------------------------------------------
t0="$(now)"
set +e
java -Xss4m "${props[@]}" -jar "$launcher" --disable-banner --details=summary --disable-ansi-colors \
    --class-path "$work/classes/main:$work/classes/test" --scan-class-path 2>&1 | tee "$work/junit.log"
status=${PIPESTATUS[0]}
set -e
echo "tests ran in $(since "$t0")" >&2

count() { # count "tests successful" -> the number in "[   12 tests successful   ]"
    sed -nE "s/^\[ *([0-9]+) $1 *\]$/\1/p" "$work/junit.log" | tail -n 1
}
passed="$(count 'tests successful')"
[[ -n "$passed" ]] || die "the JUnit launcher printed no summary (exit code $status)"
failed=$(( $(count 'tests failed') + $(count 'tests aborted') + $(count 'tests skipped') \
    + $(count 'containers failed') + $(count 'containers aborted') ))
echo "$passed passed, $failed failed"
if [[ "$status" != 0 || "$failed" != 0 || "$passed" == 0 ]]; then
    exit 1
fi
