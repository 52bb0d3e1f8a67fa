"""Runtime speed: tokenization + post-processing share of model time, and batch throughput.

    python -m pocketbert.benchmarks.runtime_speed [--bundle DIR ...] [--threads 2] [--runs 100]

Without --bundle it converts the real all-MiniLM-L6-v2 twice into a temporary directory (a
classification bundle and an NER bundle, each ONNX + TFLite, fp32 + int8-dynamic, TFLite buckets 32-128;
needs `pip install -e '.[convert]'`).  Prints Markdown tables:

1. per sentence at sequence length 128, batch 1: median milliseconds of tokenization (+ padding), the
   model run and the post-processing (scores and labels, or NER decoding with simple aggregation), and
   their share: (tokenization + post-processing) / model.  Goal: < 5%.
2. throughput in sentences/s of the whole pipeline call on 256 real sentences (SST-2 dev or CoNLL-2003
   dev, real lengths) with batch size 1, 8 and 32 (LiteRT and dynamic int8 ONNX run one row at a time
   whatever the batch).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pocketbert import runtime
from pocketbert.runtime import batching, machine
from pocketbert.runtime.classification import ranked, scores
from pocketbert.runtime.ner import TokenizedWindow, decode_text

SEQ = 128


def _texts_of_length(pipe, source: list[str], length: int, count: int) -> list[str]:
    """Real text cut at word boundaries to exactly ``length`` tokens (specials included)."""
    words = " ".join(source).split()
    out, start = [], 0
    while len(out) < count and start < len(words):
        lo, hi = start + 1, min(len(words), start + 4 * length)
        while lo < hi:  # the longest run of words that still fits
            mid = (lo + hi + 1) // 2
            n = pipe.encoder.length(" ".join(words[start:mid]))
            lo, hi = (mid, hi) if n <= length else (lo, mid - 1)
        text = " ".join(words[start:lo])
        if pipe.encoder.length(text) == length:
            out.append(text)
        start = lo
    return out


def _median_ms(fn, items) -> float:
    times = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def stages(pipe, texts: list[str]) -> dict[str, float]:
    """Median ms per sentence of tokenization, model and post-processing, measured separately."""
    names = pipe.bundle.input_names
    ner = pipe.task == "ner"

    def tokenize(text):
        enc = pipe.encoder.windows([text], 0)[0][0] if ner else pipe.encoder.encode([(text, None)])[0]
        return enc, batching.pad([(enc.ids, enc.type_ids)], names, pipe.encoder.pad_id)

    encoded = [tokenize(t) for t in texts]
    assert all(feeds["input_ids"].shape[1] == SEQ for _, feeds in encoded)
    outputs = [pipe.backend.run(feeds) for _, feeds in encoded]  # warm-up and inputs for post-processing

    def post(i):
        enc, logits = encoded[i][0], outputs[i][0]
        if ner:
            window = TokenizedWindow(enc.ids, enc.tokens, enc.offsets, enc.special_tokens_mask)
            return decode_text(texts[i], [window], [logits], "simple", how=pipe.decoding)
        return ranked(scores(logits[None], pipe.function)[0], pipe.labels, legacy=True)

    return {"tokenize": _median_ms(tokenize, texts),
            "model": _median_ms(lambda item: pipe.backend.run(item[1]), encoded),
            "post": _median_ms(post, range(len(texts)))}


def throughput(pipe, texts: list[str], batch_size: int) -> float:
    pipe.batch_size = batch_size
    pipe(texts[:16])  # warm-up
    start = time.perf_counter()
    pipe(texts)
    return len(texts) / (time.perf_counter() - start)


def label(task: str, artifact) -> str:
    """Row name; an int8 file that kept Linear layers in float says how many, since they set its speed."""
    fallback = artifact.details.get("float_fallback") or {}
    kept = fallback.get("linears_in_float")
    extra = f" ({kept} of {fallback.get('linears')} Linear in float)" if kept else ""
    return f"{task} {artifact.recipe}{extra}"


def build_bundles(root: Path, threads: int) -> list[Path]:
    from pocketbert.converter.pipeline import ConvertOptions, convert

    common = dict(formats="onnx,tflite", opts="int8", buckets=[32, 64, 128], verify_samples=300,
                  measure_latency=False, threads=threads)
    return [convert(ConvertOptions(checkpoint="minilm", out=root / "minilm-cls", **common)).bundle,
            # A fresh random head's token logits are near-ties, so int8 flips more argmaxes than a trained
            # head would; speed does not depend on it, so accept the bundle at 90% agreement.
            convert(ConvertOptions(checkpoint="minilm", out=root / "minilm-ner", task="ner",
                                   labels=["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC",
                                           "I-MISC"], int8_min_agreement=0.9, **common)).bundle]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", action="append", type=Path, help="bundle directory (repeatable)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=100, help="sentences of 128 tokens timed per stage")
    args = parser.parse_args()
    from pocketbert.converter.inputs.texts import data_dir, read_texts

    data = data_dir()
    sst2 = read_texts(data / "glue" / "SST-2" / "dev.tsv")
    conll = read_texts(data / "conll2003" / "dev.txt")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.bundle:
            print("converting all-MiniLM-L6-v2 (classification and NER bundles, a few minutes)…", flush=True)
        bundles = args.bundle or build_bundles(Path(tmp), args.threads)
        overhead, speed = [], []
        for bundle in bundles:
            manifest = runtime.Bundle.open(bundle)
            for artifact in (a for a in manifest.artifacts if a.passed):
                pipe = runtime.load(bundle, recipe=artifact.recipe, threads=args.threads)
                source = conll if pipe.task == "ner" else sst2
                texts = _texts_of_length(pipe, source, SEQ, args.runs)
                s = stages(pipe, texts)
                share = (s["tokenize"] + s["post"]) / s["model"]
                name = label(pipe.task, artifact)
                overhead.append(f"| {name} | {s['tokenize']:.3f} | {s['model']:.2f} | {s['post']:.3f} | "
                                f"{share:.1%} |")
                real = source[:256]
                rates = [throughput(pipe, real, b) for b in (1, 8, 32)]
                speed.append(f"| {name} | " + " | ".join(f"{r:.0f}" for r in rates) + " |")
                print(f"  measured {bundle.name} {artifact.recipe}", flush=True)
    info = machine.describe()
    load = f", load average {info['load_average'][0]:.2f}" if info["load_average"] else ""
    print(f"\n{info['cpu']} ({', '.join(info['matrix_flags'])}), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"{load}")
    print(f"\nPer sentence, sequence {SEQ}, batch 1, {args.threads} threads (median ms of {args.runs}):\n")
    print("| task, artifact | tokenize ms | model ms | post-process ms | (tokenize + post) / model |")
    print("|---|---|---|---|---|")
    print("\n".join(overhead))
    print(f"\nThroughput, sentences/s, 256 real sentences (SST-2 / CoNLL-2003 dev), {args.threads} threads:\n")
    print("| task, artifact | batch 1 | batch 8 | batch 32 |")
    print("|---|---|---|---|")
    print("\n".join(speed))


if __name__ == "__main__":
    main()
