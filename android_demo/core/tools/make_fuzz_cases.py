"""Random texts tokenized by the Python runtime, for the Java tokenizer's fuzz test.

    .venv/bin/python android_demo/core/tools/make_fuzz_cases.py OUT.jsonl [--count N] [--seed S]

Writes one JSON object per line: ``{tokenizer, mode, text, text_pair, max_length, stride, windows}``
with each window's ``input_ids``, ``tokens``, ``token_type_ids``, ``special_tokens_mask``, ``offsets``
(code points) and ``offsets_utf16`` (UTF-16 units, each relative to the text the token came from).
The expected values come from ``runtime.tokenization.TextEncoder.from_vocab``: vocab.txt plus the
tokenizer settings of tests/golden/tokenizers.json, the path an app without tokenizer.json takes.
Texts mix scripts, accents composed and decomposed, combining marks, every kind of whitespace,
control and format characters, emoji sequences, punctuation and symbols of every category, typed
special tokens, vocabulary words and uniformly random code points. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from pocketbert.converter.builtin import BUILTIN  # noqa: E402
from pocketbert.runtime.tokenization import TextEncoder  # noqa: E402

GOLDEN = REPO / "tests" / "golden" / "tokenizers.json"

RANGES = {  # (lo, hi) inclusive: scripts and blocks the text generator draws from
    "latin": [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x1E00, 0x1EFF), (0x2C60, 0x2C7F), (0xA720, 0xA7FF)],
    "greek_cyrillic": [(0x370, 0x3FF), (0x400, 0x52F), (0x1F00, 0x1FFF), (0x1C80, 0x1C8F)],
    "rtl": [(0x591, 0x5F4), (0x600, 0x6FF), (0x750, 0x77F), (0x8A0, 0x8FF)],
    "indic_se_asian": [(0x900, 0x97F), (0x980, 0x9FF), (0xB80, 0xBFF), (0xE00, 0xE7F), (0x1000, 0x109F)],
    "cjk": [(0x3040, 0x30FF), (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2B740, 0x2B93F),
            (0xF900, 0xFAFF), (0x2F800, 0x2FA1F), (0x3000, 0x303F), (0xFF00, 0xFFEF)],
    "hangul": [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F)],
    "other_scripts": [(0x530, 0x58F), (0x10A0, 0x10FF), (0x13A0, 0x13FF), (0xAB70, 0xABBF), (0x1200, 0x137F),
                      (0x10400, 0x1044F), (0x10570, 0x105BF), (0x1E900, 0x1E95F), (0x16E40, 0x16E9F)],
    "combining": [(0x300, 0x36F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0xFE20, 0xFE2F),
                  (0x8D3, 0x8FF), (0x1D165, 0x1D169), (0x1D16D, 0x1D172)],
    "symbols": [(0x2000, 0x2BFF), (0x2E00, 0x2E7F), (0x3200, 0x33FF), (0xFE30, 0xFE6F), (0x1D400, 0x1D7FF),
                (0x1F100, 0x1F1FF)],
    "emoji": [(0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1FAFF), (0x2600, 0x27BF)],
    "controls": [(0x0, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0xFEFF, 0xFEFF),
                 (0xAD, 0xAD), (0xFFF9, 0xFFFD), (0xE000, 0xE00F), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
                 (0xF0000, 0xF0010), (0x180E, 0x180E), (0x61C, 0x61C), (0x110BD, 0x110BD), (0x13430, 0x13438)],
}
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
             "\u2028\u2029\u202f\u205f\u3000\x1c\x1d\x1e\x1f"
SPECIAL_TEXT = ["[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]", "[CLS", "[cls]", "[[SEP]]", "[SEP][SEP]", "[ MASK ]"]
CASE_TRICKS = ["İ", "ı", "ẞ", "ß", "Σ", "ς", "ﬁ", "ﬀ", "K", "Ω", "Å", "ǅ", "ᾼ", "ῼ", "Ⅻ", "ⓐ", "Ａ", "𝐀",
               "ᲀ", "Ა", "Ꭰ", "𐐀", "𐕰", "𞤀", "Ⰿ", "Ꟁ", "\u1c89", "ŉ", "ǰ", "ΐ", "İstanbul", "ΣΑΣ ΣΑΣ.", "Straße"]
EMOJI_SEQUENCES = ["👩‍👩‍👧", "🇺🇸", "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "❤️", "👍🏽", "🧑‍💻", "1️⃣", "☺︎", "👨‍👩‍👧‍👦"]
PUNCT_AND_SYMBOLS = [chr(cp) for cp in range(0x20, 0x3000)
                     if unicodedata.category(chr(cp))[0] in "PS"] + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


class TextMaker:
    def __init__(self, rng: random.Random, vocab_words: list[str]):
        self.rng = rng
        self.words = vocab_words

    def code_point(self, family: str) -> str:
        lo, hi = self.rng.choice(RANGES[family])
        while True:
            cp = self.rng.randint(lo, hi)
            if not 0xD800 <= cp <= 0xDFFF:
                return chr(cp)

    def anything(self) -> str:
        while True:  # uniformly over all code points: unassigned, private use, planes 1-16
            cp = self.rng.randrange(0x110000)
            if not 0xD800 <= cp <= 0xDFFF:
                return chr(cp)

    def piece(self) -> str:
        r = self.rng.random()
        if r < 0.22:
            word = self.rng.choice(self.words)
            return word.capitalize() if self.rng.random() < 0.3 else word
        if r < 0.32:
            return self.rng.choice(WHITESPACE)
        if r < 0.40:
            return self.rng.choice(PUNCT_AND_SYMBOLS)
        if r < 0.44:
            return self.rng.choice(SPECIAL_TEXT)
        if r < 0.48:
            return self.rng.choice(CASE_TRICKS)
        if r < 0.51:
            return self.rng.choice(EMOJI_SEQUENCES)
        if r < 0.56:  # accented letters, decomposed or with stacked marks
            base = unicodedata.normalize(self.rng.choice(["NFC", "NFD"]), self.code_point("latin"))
            return base + "".join(self.code_point("combining") for _ in range(self.rng.randint(0, 3)))
        if r < 0.60:
            return self.anything()
        if r < 0.63:
            return "".join(self.code_point("latin") for _ in range(self.rng.randint(95, 110)))  # near max word
        family = self.rng.choice(list(RANGES))
        return "".join(self.code_point(family) for _ in range(self.rng.randint(1, 6)))

    def text(self, max_pieces: int) -> str:
        n = self.rng.choice([0, 1, 2, 3] + [self.rng.randint(1, max_pieces)] * 8)
        glue = self.rng.choice(["", " ", " ", " ", "\u3000", "\n"])
        return glue.join(self.piece() for _ in range(n))


def utf16_offsets(text_a: str, text_b: str | None, offsets, sequence_ids) -> list[list[int]]:
    out = []
    for (start, end), seq in zip(offsets, sequence_ids):
        text = text_b if seq == 1 else text_a
        if seq is None:
            out.append([0, 0])
            continue
        units = [0]
        for ch in text:
            units.append(units[-1] + (2 if ord(ch) > 0xFFFF else 1))
        out.append([units[start], units[end]])
    return out


def window(enc, text_a: str, text_b: str | None) -> dict:
    return {"input_ids": enc.ids, "tokens": enc.tokens, "token_type_ids": enc.type_ids,
            "special_tokens_mask": enc.special_tokens_mask, "offsets": [list(o) for o in enc.offsets],
            "offsets_utf16": utf16_offsets(text_a, text_b, enc.offsets, enc.sequence_ids)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=2500, help="single texts per tokenizer (pairs and windowed "
                        "texts: a fifth of it each)")
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    model = BUILTIN["minilm"].path()
    vocab_path = model / "vocab.txt"
    settings = json.loads(GOLDEN.read_text(encoding="utf-8"))
    words = [w for w in vocab_path.read_text(encoding="utf-8").splitlines() if w.isalpha() and len(w) > 1]
    maker = TextMaker(rng, words)
    cases = 0
    with open(args.out, "w", encoding="utf-8") as out:
        def emit(record: dict) -> None:
            nonlocal cases
            out.write(json.dumps(record, ensure_ascii=True) + "\n")
            cases += 1

        for name in sorted(settings):
            encoders: dict[int, TextEncoder] = {}

            def encoder(max_length: int) -> TextEncoder:
                if max_length not in encoders:
                    encoders[max_length] = TextEncoder.from_vocab(vocab_path, settings[name], max_length)
                return encoders[max_length]

            for _ in range(args.count):
                text = maker.text(24)
                max_length = rng.choice([512, 512, 512, 2, 3, 5, 8, 13, 24])
                enc = encoder(max_length).encode([(text, None)])[0]
                emit({"tokenizer": name, "mode": "single", "text": text, "text_pair": None, "max_length": max_length,
                      "stride": None, "windows": [window(enc, text, None)]})
            for _ in range(args.count // 5):
                a, b = maker.text(12), maker.text(12)
                max_length = rng.choice([512, 3, 4, 7, 12, 20, 33])
                enc = encoder(max_length).encode([(a, b)])[0]
                emit({"tokenizer": name, "mode": "pair", "text": a, "text_pair": b, "max_length": max_length,
                      "stride": None, "windows": [window(enc, a, b)]})
            for _ in range(args.count // 5):
                text = maker.text(40)
                max_length = rng.choice([3, 8, 17, 40])
                content = max_length - 2
                stride = rng.choice(sorted({0, 1 % content, content // 4, content // 2, content - 1}))
                encs = encoder(max_length).windows([text], stride)[0]
                emit({"tokenizer": name, "mode": "windows", "text": text, "text_pair": None,
                      "max_length": max_length, "stride": stride, "windows": [window(e, text, None) for e in encs]})
    print(f"wrote {args.out}: {cases} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
