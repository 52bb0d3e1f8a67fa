#!/usr/bin/env bash
# Compile the WebView app's Java against the Android API jar and its JUnit 5 tests with javac, run them with the
# JUnit console launcher, and print "N passed, N failed" as the last line (non-zero exit when anything failed).
#
#   android_demo/webview/run_tests.sh [--classes DIR]
#
# --classes keeps the compiled classes in DIR (the browser check runs AssetServer from them); default: a
# temporary folder. The Android jar is android-28.jar from ../shared/android beside the repository (or
# $POCKETBERT_ANDROID_JARS); JUnit 5 is Debian's (apt-get install junit5), installed when missing and run as root.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
classes=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --classes) classes="$2"; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "run_tests.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
die() { echo "run_tests.sh: $*" >&2; exit 2; }

command -v javac >/dev/null || die "javac not found: install a JDK 17 (Debian: apt-get install -y openjdk-17-jdk-headless)"
platform="${POCKETBERT_ANDROID_JARS:-$repo/../shared/android}/android-28.jar"
[[ -f "$platform" ]] || die "$platform not found: put android-28.jar there (../shared/android/README.md) or set POCKETBERT_ANDROID_JARS"
launcher=/usr/share/java/junit-platform-console-standalone.jar
if [[ ! -f "$launcher" ]] && [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    # one apt-get at a time with the suite's other installs (pocketbert/debian_packages.py takes this lock)
    apt() { flock "${TMPDIR:-/tmp}/pocketbert-apt.lock" apt-get -o DPkg::Lock::Timeout=900 "$@"; }
    DEBIAN_FRONTEND=noninteractive apt install -y -q junit5 >&2 \
        || { DEBIAN_FRONTEND=noninteractive apt update -q >&2 && DEBIAN_FRONTEND=noninteractive apt install -y -q junit5 >&2; } \
        || die "apt-get install junit5 failed"
fi
[[ -f "$launcher" ]] || die "$launcher not found: install JUnit 5 (Debian: sudo apt-get install -y junit5)"

if [[ -z "$classes" ]]; then
    classes="$(mktemp -d -t pocketbert-webview-tests.XXXXXX)"
    trap 'rm -rf "$classes"' EXIT
fi
mkdir -p "$classes/main" "$classes/test"
# the app's classes exactly as build_apk.py compiles them (Java 8, the Android API jar), then the tests
javac --release 8 -Xlint:all,-options -Werror -encoding UTF-8 -classpath "$platform" -d "$classes/main" \
    $(find "$here/src/main/java" -name '*.java' | sort)
javac --release 11 -encoding UTF-8 -classpath "$classes/main:$launcher" -d "$classes/test" \
    $(find "$here/src/test/java" -name '*.java' | sort)
set +e
java -jar "$launcher" --disable-banner --details=summary --disable-ansi-colors \
    --class-path "$classes/main:$classes/test" --scan-class-path 2>&1 | tee "$classes/junit.log" >&2
status=${PIPESTATUS[0]}
set -e
count() { # count "tests successful" -> the number in "[   12 tests successful   ]"
    sed -nE "s/^\[ *([0-9]+) $1 *\]$/\1/p" "$classes/junit.log" | tail -n 1
}
passed="$(count 'tests successful')"
[[ -n "$passed" ]] || die "the JUnit launcher printed no summary (exit code $status)"
failed=$(( $(count 'tests failed') + $(count 'tests aborted') + $(count 'tests skipped') \
    + $(count 'containers failed') + $(count 'containers aborted') ))
echo "$passed passed, $failed failed"
[[ "$status" == 0 && "$failed" == 0 && "$passed" != 0 ]]
