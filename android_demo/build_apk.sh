#!/usr/bin/env bash
# The demo APK in one command: the web demo in a WebView with both bundles (android_demo/webview/build_apk.py).
#
#   android_demo/build_apk.sh [--ner BUNDLE] [--classification BUNDLE] [--out pocketbert-demo.apk] [--overwrite]
#
# Defaults: bundles/ner-phone and bundles/sst2-phone, as set-up command 1 converts them. Runs the repository's
# Python (.venv/bin/python, or $POCKETBERT_PYTHON), which cuts the bundles for the web.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${POCKETBERT_PYTHON:-$repo/.venv/bin/python}"
if [[ ! -x "$python" ]]; then
    echo "Error: $python not found" >&2
    echo "Fix: install the project first (README, set-up command 1), or set POCKETBERT_PYTHON" >&2
    exit 2
fi
exec "$python" "$repo/android_demo/webview/build_apk.py" "$@"
