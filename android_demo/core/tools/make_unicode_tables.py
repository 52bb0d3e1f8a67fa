"""Write the Unicode tables of the Java WordPiece tokenizer, read from the reference tokenizer itself.

    .venv/bin/python android_demo/core/tools/make_unicode_tables.py          # (re)write the tables
    .venv/bin/python android_demo/core/tools/make_unicode_tables.py --check  # exit 1 if they are stale

Why tables instead of java.lang.Character: the Python runtime tokenizes with Hugging Face's
``tokenizers`` (Rust), whose BERT normaliser and pre-tokeniser mix three Unicode versions: the
``unicode_categories`` crate (control, format, private-use, punctuation and non-spacing-mark
categories of an old Unicode version), Rust's standard library (White_Space, lower-casing: recent
Unicode) and ``unicode-normalization-alignments`` (NFD and combining classes, another version).
No JDK matches that mix, and an Android phone's ``Character``/ICU data changes with the OS version,
so a tokenizer built on the platform's tables would tokenize differently from phone to phone.  These
tables are the reference's behaviour on every code point (U+0000..U+10FFFF, surrogates excluded),
probed through the installed ``tokenizers`` package; ``--check`` (run by tests/test_android_core.py)
fails when an upgrade of ``tokenizers`` changed any of it.

Each table is one section of ``unicode-tables.txt`` (``pocketbert.core.text.UnicodeTables`` reads it):

* ``removed``, ``whitespace``, ``punctuation``, ``chinese``, ``nonspacing_mark``: code point sets as
  ``lo..hi`` hex ranges: what ``clean_text`` deletes; what splits words (and ``clean_text`` turns into
  a space); what is isolated as its own word; what ``tokenize_chinese_chars`` surrounds with spaces;
  what ``strip_accents`` drops after NFD.
* ``combining_class``: ``lo..hi class`` for the non-zero canonical combining classes NFD orders by.
* ``decomposition``: ``cp: d1 d2 ...`` full canonical decompositions (Hangul syllables excluded: they
  are algorithmic and checked against the algorithm here).
* ``lowercase``: ``lo..hi/step delta`` for one-to-one mappings (``cp + delta`` for every ``step``-th
  code point of the range), ``cp: c1 c2 ...`` for one-to-many mappings.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

import tokenizers
from tokenizers import normalizers, pre_tokenizers

TABLES = (Path(__file__).resolve().parents[1] / "src/main/resources/pocketbert/core/text/unicode-tables.txt")
HANGUL_BASE, HANGUL_COUNT = 0xAC00, 11172


def bert(clean=False, chinese=False, strip=False, lower=False) -> normalizers.BertNormalizer:
    return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip,
                                      lowercase=lower)


def code_points():
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def hangul(cp: int) -> str:
    s = cp - HANGUL_BASE
    lead, vowel, trail = 0x1100 + s // 588, 0x1161 + (s % 588) // 28, 0x11A7 + s % 28
    return chr(lead) + chr(vowel) + (chr(trail) if trail != 0x11A7 else "")


def probe() -> dict:
    clean, chinese, strip, lower = bert(clean=True), bert(chinese=True), bert(strip=True), bert(lower=True)
    nfd, pre = normalizers.NFD(), pre_tokenizers.BertPreTokenizer()
    sets = {name: [] for name in ("removed", "whitespace", "punctuation", "chinese", "nonspacing_mark")}
    decomposition, lowercase, combining = {}, {}, {}
    for cp in code_points():
        c = chr(cp)
        cleaned = clean.normalize_str(c)
        if cleaned == "":
            sets["removed"].append(cp)
        words = [w for w, _ in pre.pre_tokenize_str(f"a{c}a")]
        if words == ["a", "a"]:
            sets["whitespace"].append(cp)
        elif words == ["a", c, "a"]:
            sets["punctuation"].append(cp)
        elif words != [f"a{c}a"]:
            raise SystemExit(f"U+{cp:04X}: unexpected pre-tokenization {words}")
        if cleaned not in ("", c) and not (cleaned == " " and cp in sets["whitespace"][-1:]):
            raise SystemExit(f"U+{cp:04X}: clean_text gives {cleaned!r}, neither removal nor a whitespace space")
        if chinese.normalize_str(c) != c:
            if chinese.normalize_str(c) != f" {c} ":
                raise SystemExit(f"U+{cp:04X}: unexpected CJK spacing")
            sets["chinese"].append(cp)
        decomposed = nfd.normalize_str(c)
        if decomposed != c:
            if HANGUL_BASE <= cp < HANGUL_BASE + HANGUL_COUNT:
                if decomposed != hangul(cp):
                    raise SystemExit(f"U+{cp:04X}: the reference's Hangul decomposition is not the algorithm's")
            else:
                decomposition[cp] = decomposed
        elif strip.normalize_str(c) == "":
            sets["nonspacing_mark"].append(cp)
        lowered = lower.normalize_str(c)
        if lowered != c:
            lowercase[cp] = lowered
        # Canonical combining classes never change once assigned, so the reference knows a mark's class
        # exactly when it reorders it: a mark of class k < 240 after U+0345 (class 240) moves before it.
        ccc = unicodedata.combining(c)
        if ccc and decomposed == c:
            probe_text, reordered = (f"\u0345{c}", f"{c}\u0345") if ccc < 240 else (f"{c}\u0334", f"\u0334{c}")
            if nfd.normalize_str(probe_text) == reordered:
                combining[cp] = ccc
    _check_strip_is_nfd_then_filter(strip, decomposition, set(sets["nonspacing_mark"]))
    return {"sets": sets, "decomposition": decomposition, "lowercase": lowercase, "combining": combining}


def _check_strip_is_nfd_then_filter(strip, decomposition: dict, marks: set) -> None:
    for cp, decomposed in decomposition.items():
        expected = "".join(ch for ch in decomposed if ord(ch) not in marks)
        if strip.normalize_str(chr(cp)) != expected:
            raise SystemExit(f"U+{cp:04X}: strip_accents is not NFD followed by dropping non-spacing marks")


def ranges(values: list[int]) -> list[tuple[int, int]]:
    out = []
    for v in values:
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def hex_range(lo: int, hi: int) -> str:
    return f"{lo:x}" if lo == hi else f"{lo:x}..{hi:x}"


def lowercase_lines(mapping: dict[int, str]) -> list[str]:
    lines, run = [], None  # run: [lo, hi, step, delta]
    single = sorted((cp, ord(m) - cp) for cp, m in mapping.items() if len(m) == 1)
    for cp, delta in single:
        if run and run[3] == delta and (cp - run[1] == run[2] or (run[0] == run[1] and cp - run[1] in (1, 2))):
            run[2], run[1] = cp - run[1], cp
            continue
        if run:
            lines.append(run)
        run = [cp, cp, 1, delta]
    if run:
        lines.append(run)
    out = [f"{hex_range(lo, hi)}/{step} {delta:+d}" for lo, hi, step, delta in lines]
    out += [f"{cp:x}: {' '.join(f'{ord(ch):x}' for ch in m)}" for cp, m in sorted(mapping.items()) if len(m) > 1]
    return out


def render(tables: dict) -> str:
    lines = [f"# Unicode tables of pocketbert.core.text, probed from tokenizers {tokenizers.__version__} (the Python",
             "# runtime's reference) by android_demo/core/tools/make_unicode_tables.py. Generated: do not edit."]
    for name, values in tables["sets"].items():
        lines.append(f"[{name}]")
        lines += [hex_range(lo, hi) for lo, hi in ranges(values)]
    lines.append("[combining_class]")
    by_class: list[tuple[int, int, int]] = []
    for cp, ccc in sorted(tables["combining"].items()):
        if by_class and by_class[-1][1] == cp - 1 and by_class[-1][2] == ccc:
            by_class[-1] = (by_class[-1][0], cp, ccc)
        else:
            by_class.append((cp, cp, ccc))
    lines += [f"{hex_range(lo, hi)} {ccc}" for lo, hi, ccc in by_class]
    lines.append("[decomposition]")
    lines += [f"{cp:x}: {' '.join(f'{ord(ch):x}' for ch in d)}" for cp, d in sorted(tables["decomposition"].items())]
    lines.append("[lowercase]")
    lines += lowercase_lines(tables["lowercase"])
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed tables differ")
    args = parser.parse_args()
    text = render(probe())
    if args.check:
        current = TABLES.read_text(encoding="utf-8") if TABLES.exists() else ""
        if current != text:
            old, new = set(current.splitlines()), set(text.splitlines())
            print(f"{TABLES} is stale for tokenizers {tokenizers.__version__}: {len(new - old)} lines to add, "
                  f"{len(old - new)} to remove, e.g. {sorted(new ^ old)[:5]}; regenerate it with "
                  f"{Path(__file__).name} and run the Java tests", file=sys.stderr)
            return 1
        print(f"{TABLES.name} matches tokenizers {tokenizers.__version__}")
        return 0
    TABLES.write_text(text, encoding="utf-8")
    print(f"wrote {TABLES} ({len(text.splitlines())} lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
