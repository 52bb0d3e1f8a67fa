"""Real TFLite bundles and the Python runtime's results on them, for the Java pipeline tests.

    .venv/bin/python android_demo/core/tools/make_pipeline_cases.py WORKDIR [--sst2-phone BUNDLE]

1. Saves two tiny seeded checkpoints (the converter's ``tiny_config`` of a family, random weights):
   BERT with a CoNLL BIO token-classification head, DistilBERT (no ``token_type_ids``) with a
   3-label sequence-classification head.
2. Converts them with ``pocketbert-convert`` into ``WORKDIR/ner-bundle`` (``tflite:fp32`` and
   ``tflite:int8-static``: int8 logits with a scale and zero point) and ``WORKDIR/cls-bundle``
   (``tflite:fp32``, ``tflite:int8-dynamic`` and ``tflite:int4-dynamic``; its word embeddings factored, as the
   phone-sized models' are: a narrow table and a projection), buckets 16 and 32, and cuts
   ``WORKDIR/cls-int4-phone`` from it: the phone cut keeping the int4 file, as the app's assets hold it.
   Converts the shipped phone-sized SST-2 model as its documentation says (``sst2-phone --format tflite
   --max-size 8MB``, buckets 32 and 64) and cuts ``WORKDIR/sst2-phone-cut`` from it for the phone: its int4 file,
   every Linear at 4 bits, and its 16,000-piece vocabulary. With ``--sst2-phone BUNDLE`` it cuts that bundle
   instead (an sst2-phone conversion with buckets 32 and 64 and its int4 file: the test suite passes the one its
   browser tests convert, so that the 40 MB model is not converted twice).
3. Runs texts through ``runtime.load(bundle, backend="tflite")`` while recording every LiteRT
   signature call (signature key, named inputs, the raw ``logits`` output with its dtype and
   quantisation), and writes ``WORKDIR/pipeline_cases.json``: the recorded calls, the signature list,
   the artifact the runtime chose, and its entities / labels for every text.

The Java test replays the recorded outputs through a ``ModelRunner`` that only answers inputs Python
fed (so bucketing, padding and feeding by name must be identical too) and must reproduce the
runtime's results. This is the one place the model is a stand-in: LiteRT does not run on the JVM.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from ai_edge_litert.interpreter import Interpreter  # noqa: E402

from pocketbert import runtime  # noqa: E402
from pocketbert.converter.output.cut import cut  # noqa: E402
from pocketbert.runtime.ner import AGGREGATIONS  # noqa: E402

NER_LABELS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
CLS_LABELS = ["negative", "neutral", "positive"]
CLS_EMBEDDING_RANK = 8  # of the tiny config's 32-wide word embeddings
NER_TEXTS = [
    "Peter Blackburn met EU officials in Brussels on Friday .",
    "Peter Blackburn of the European Commission said on Thursday it disagreed with German advice to consumers to "
    "shun British lamb until scientists determine whether mad cow disease can be transmitted to sheep .",
    "Café déjà vu in Zu\u0308rich and São Paulo — naïve façade, Ærøskøbing.",
    "東京は日本の首都です。서울특별시 and ｆｕｌｌｗｉｄｔｈ ＡＢＣ 🇺🇸 👩‍👩‍👧",
    "[CLS] typed special tokens [SEP] and [MASK] " + "x" * 120 + " supercalifragilistic",
    "",
    "  \t ",
]
CLS_TEXTS = [
    ("a charming and often affecting journey", None),
    ("unflinchingly bleak and desperate", None),
    ("The cat sat on the mat.", "A feline was seated!"),
    ("Ærøskøbing harbour 東京 tower " * 6, "and a second text that is long as well " * 3),
    ("", None),
]


def build_checkpoints(work: Path) -> dict[str, Path]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer

    from pocketbert.converter.builtin import BUILTIN
    from pocketbert.converter.families import families
    from pocketbert.converter.weights.factored_table import KEY, factor

    tokenizer = AutoTokenizer.from_pretrained(BUILTIN["minilm"].path())
    out = {}
    for name, family, head, labels in (("ner", "bert", AutoModelForTokenClassification, NER_LABELS),
                                       ("cls", "distilbert", AutoModelForSequenceClassification, CLS_LABELS)):
        config = next(f for f in families() if f.name == family).tiny_config(vocab_size=len(tokenizer))
        config.num_labels = len(labels)
        config.id2label = dict(enumerate(labels))
        config.label2id = {label: i for i, label in enumerate(labels)}
        torch.manual_seed(7)
        directory = work / f"{name}-checkpoint"
        model = head.from_config(config).eval()
        if name == "cls":  # the phone-sized form: word embeddings factored (the loader rebuilds it from config.json)
            factor(model, CLS_EMBEDDING_RANK)
            model.config.pocketbert = {KEY: CLS_EMBEDDING_RANK}
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
        out[name] = directory
    return out


def convert(checkpoint: Path, out: Path, *options: str) -> None:
    """``pocketbert-convert CHECKPOINT OPTIONS`` through the command line's own entry point, in this process: a
    new interpreter would spend ~6 s of each ~15 s conversion importing what this one already has."""
    from pocketbert.converter.cli import main as converter

    argv = [str(checkpoint), *options, "--out", str(out), "--overwrite", "--no-latency", "--verify-samples", "20",
            "--calibration-samples", "16", "--threads", "1"]
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = converter(argv)
    if code != 0:
        raise SystemExit(f"conversion failed ({code}): pocketbert-convert {' '.join(argv)}\n{said.getvalue()}")


class Recorder:
    """Wraps LiteRT signature runners and keeps every call: inputs by name, raw logits, quantisation."""

    def __init__(self):
        self.calls: dict[tuple, dict] = {}

    def install(self):
        original = Interpreter.get_signature_runner
        recorder = self

        def get_signature_runner(interpreter, signature_key=None):
            return recorder.wrap(original(interpreter, signature_key), signature_key)

        Interpreter.get_signature_runner = get_signature_runner
        return lambda: setattr(Interpreter, "get_signature_runner", original)

    def wrap(self, runner, key):
        recorder = self

        class Recording:
            def __call__(self, **inputs):
                out = runner(**inputs)
                raw = out["logits"]
                scale, zero_point = runner.get_output_details()["logits"]["quantization"]
                feeds = {name: np.asarray(value).reshape(-1).tolist() for name, value in sorted(inputs.items())}
                recorder.calls[(key, json.dumps(feeds))] = {
                    "signature": key, "inputs": feeds, "shape": list(raw.shape), "dtype": str(raw.dtype),
                    "values": np.asarray(raw).reshape(-1).tolist(), "scale": float(scale),
                    "zero_point": int(zero_point)}
                return out

            def __getattr__(self, name):
                return getattr(runner, name)

        return Recording()

    def take(self) -> list[dict]:
        calls, self.calls = list(self.calls.values()), {}
        return calls


def plain(value):
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def signature_list(model: Path) -> dict:
    signatures = Interpreter(model_path=str(model)).get_signature_list()
    return {key: {"inputs": list(s["inputs"]), "outputs": list(s["outputs"])} for key, s in signatures.items()}


def ner_cases(bundle: Path, recorder: Recorder) -> dict:
    pipe = runtime.load(bundle, backend="tflite")
    cases = []
    for text in NER_TEXTS:
        for stride in (None, 3):
            for aggregation in AGGREGATIONS:
                entities = pipe(text, aggregation=aggregation, stride=stride)
                cases.append({"text": text, "stride": stride, "aggregation": aggregation, "entities": plain(entities)})
    return {"bundle": bundle.name, "recipe": pipe.artifact.recipe, "max_length": pipe.max_length,
            "default_stride": pipe.default_stride, "signatures": signature_list(pipe.artifact.path),
            "cases": cases, "calls": recorder.take()}


def classification_cases(bundle: Path, recorder: Recorder) -> dict:
    pipe = runtime.load(bundle, backend="tflite")
    cases = []
    for a, b in CLS_TEXTS:
        labels = pipe(a if b is None else (a, b), top_k=None)
        truncated = bool(pipe.encoder.encode([(a, b)])[0].overflowing)
        cases.append({"text": a, "text_pair": b, "labels": plain(labels), "truncated": truncated})
    return {"bundle": bundle.name, "recipe": pipe.artifact.recipe, "max_length": pipe.max_length,
            "signatures": signature_list(pipe.artifact.path), "cases": cases, "calls": recorder.take()}


def main() -> int:
    args = sys.argv[1:]
    sst2_phone = None
    if len(args) == 3 and args[1] == "--sst2-phone":
        args, sst2_phone = args[:1], Path(args[2]).resolve()
    if len(args) != 1:
        raise SystemExit(__doc__)
    work = Path(args[0]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    checkpoints = build_checkpoints(work)
    convert(checkpoints["ner"], work / "ner-bundle", "--recipe", "tflite:int8-static", "--buckets", "16,32")
    convert(checkpoints["cls"], work / "cls-bundle", "--recipe", "tflite:int8-dynamic,tflite:int4-dynamic",
            "--buckets", "16,32")
    # int4 ranks after int8, so the full bundle's replay runs int8; the cut is where the app meets int4
    cut(work / "cls-bundle", "phone", work / "cls-int4-phone", recipe="tflite:int4-dynamic", overwrite=True)
    # the real phone-sized model with its documented small-size option; the phone cut keeps its int4 file
    if sst2_phone is None:
        sst2_phone = work / "sst2-phone"
        # --no-dev-gate: these cases compare Java with Python on the bundle; its accuracy has gates of its own
        convert(Path("sst2-phone"), sst2_phone, "--opt", "nonorm,relu,fold", "--format", "tflite", "--max-size", "8MB",
                "--buckets", "32,64", "--no-dev-gate")
    cut(sst2_phone, "phone", work / "sst2-phone-cut", overwrite=True)
    recorder = Recorder()
    restore = recorder.install()
    try:
        cases = {"ner": ner_cases(work / "ner-bundle", recorder),
                 "classification": classification_cases(work / "cls-bundle", recorder),
                 "phone": classification_cases(work / "sst2-phone-cut", recorder)}
    finally:
        restore()
    (work / "pipeline_cases.json").write_text(json.dumps(cases, ensure_ascii=True), encoding="utf-8")
    print(f"wrote {work / 'pipeline_cases.json'}: {len(cases['ner']['cases'])} NER and "
          f"{len(cases['classification']['cases']) + len(cases['phone']['cases'])} classification cases, "
          f"{sum(len(section['calls']) for section in cases.values())} recorded model calls", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
