"""Parity: the runtime's output equals Hugging Face's PyTorch pipeline's on real sentences.

Same labels, same entity spans, words and offsets; scores within SCORE_TOLERANCE (fp32 artifacts: the
exported models match PyTorch to ~1e-6 in the logits).  ONNX and TFLite alike.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer, pipeline

from pocketbert import runtime
from pocketbert.converter.checkpoints.loading import load as load_checkpoint
from pocketbert.converter.inputs.texts import read_texts

from ..conftest import DATA

SCORE_TOLERANCE = 1e-5
AGGREGATIONS = runtime.AGGREGATIONS
BACKENDS = ["onnx", "tflite"]
STRIDE = 24


def hf_tokenizer(bundle, max_length: int):
    tok = AutoTokenizer.from_pretrained(bundle)
    tok.model_max_length = max_length  # Hugging Face truncates (and windows) at model_max_length
    return tok


def assert_same_entities(got: list[list[dict]], want: list[list[dict]]) -> float:
    """Exact keys/labels/spans/words; returns the largest score difference (checked ≤ tolerance)."""
    assert len(got) == len(want)
    worst = 0.0
    for i, (g_list, w_list) in enumerate(zip(got, want)):
        assert [{k: v for k, v in g.items() if k != "score"} for g in g_list] == \
               [{k: (int(v) if k in ("start", "end", "index") else v) for k, v in w.items() if k != "score"}
                for w in w_list], f"text {i}"
        for g, w in zip(g_list, w_list):
            worst = max(worst, abs(g["score"] - float(w["score"])))
    assert worst <= SCORE_TOLERANCE
    return worst


@pytest.fixture(scope="module")
def ner_texts(conll_sentences, ner_bundle) -> list[str]:
    """130 CoNLL-2003 dev sentences from across the file that fit the model (longer ones: windows test)."""
    tok = hf_tokenizer(ner_bundle, 10_000)
    return [t for t in conll_sentences[::25] if len(tok(t)["input_ids"]) <= 128]


@pytest.fixture(scope="module")
def hf_ner(checkpoints, ner_bundle):
    model = AutoModelForTokenClassification.from_pretrained(checkpoints["bert"]["ner"]).eval()
    return pipeline("token-classification", model=model, tokenizer=hf_tokenizer(ner_bundle, 128))


@pytest.fixture(scope="module")
def hf_ner_results(hf_ner, ner_texts) -> dict[str, list]:
    return {a: hf_ner(ner_texts, aggregation_strategy=a) for a in AGGREGATIONS}


@pytest.fixture(scope="module", params=BACKENDS)
def ner(request, ner_bundle):
    pipe = runtime.load(ner_bundle, backend=request.param, precision="fp32")
    assert pipe.artifact.backend == request.param
    return pipe


@pytest.mark.parametrize("aggregation", AGGREGATIONS)
def test_ner_matches_hf_pipeline_on_conll(ner, aggregation, ner_texts, hf_ner_results):
    assert_same_entities(ner(ner_texts, aggregation=aggregation), hf_ner_results[aggregation])


def test_ner_parity_is_not_vacuous(hf_ner_results, ner_texts):
    """The random head must tag plenty of entities, stray I- tags and multi-piece words, or parity proves little."""
    tags = [e["entity"] for text in hf_ner_results["none"] for e in text]
    assert len(ner_texts) >= 100
    assert sum(t.startswith("B-") for t in tags) > 500 and sum(t.startswith("I-") for t in tags) > 500
    stray = 0  # I-X not preceded by a token tagged X: Hugging Face starts an entity there
    for text in hf_ner_results["none"]:
        by_index = {e["index"]: e["entity"] for e in text}
        stray += sum(tag.startswith("I-") and by_index.get(i - 1, "O")[2:] != tag[2:] for i, tag in by_index.items())
    assert stray > 100
    assert sum(len(text) for text in hf_ner_results["simple"]) > 1000
    assert any("##" in e["word"] for text in hf_ner_results["none"] for e in text)
    words = {a: [(e["start"], e["end"], e["entity_group"]) for text in hf_ner_results[a] for e in text]
             for a in ("simple", "first", "average", "max")}
    assert len({tuple(v) for v in words.values()}) == 4  # the strategies disagree somewhere, so each is tested


@pytest.fixture(scope="module")
def long_texts(conll_sentences) -> list[str]:
    """Whole CoNLL documents' worth of sentences: 300-900 tokens, several windows each."""
    return [" ".join(conll_sentences[i:i + 30]) for i in (100, 700, 1500)]


def stitched_hf_outputs(chunks: list[dict], step: int) -> dict:
    """Hugging Face's model outputs for the ``stride`` windows of one text -> one output of the whole text:
    each text token's row from the window whose nearest cut (a window edge inside the text) is farthest
    from it, the earlier window on a tie.  Written here from the rule alone, not from runtime/windows.py."""
    last = len(chunks) - 1
    chosen = {}  # position in the text -> (margin, window, row in the window)
    for k, chunk in enumerate(chunks):
        rows = [i for i, special in enumerate(chunk["special_tokens_mask"][0].tolist()) if not special]
        for j, row in enumerate(rows):
            margin = min(j if k else len(rows), len(rows) - 1 - j if k < last else len(rows))
            position = k * step + j
            if position not in chosen or margin > chosen[position][0]:
                chosen[position] = (margin, k, row)
    picks = [(0, 0)] + [chosen[p][1:] for p in sorted(chosen)] + [(last, chunks[last]["input_ids"].shape[1] - 1)]
    assert sorted(chosen) == list(range(len(chosen)))
    out = {key: torch.stack([chunks[k][key][0][row] for k, row in picks])[None]
           for key in ("logits", "special_tokens_mask", "offset_mapping", "input_ids")}
    return {**out, "sentence": chunks[0]["sentence"], "is_last": True}


def hf_decoding_of_stitched_windows(hf_ner, text: str, aggregation: str) -> list[dict]:
    """Hugging Face's model on its own ``stride`` windows, stitched, then its post-processing as one window."""
    pre, forward, post = hf_ner._sanitize_parameters(aggregation_strategy=aggregation, stride=STRIDE)
    chunks = [hf_ner.forward(chunk, **forward) for chunk in hf_ner.preprocess(text, **pre)]
    assert len(chunks) > 2
    step = hf_ner.tokenizer.model_max_length - 2 - STRIDE
    return hf_ner.postprocess([stitched_hf_outputs(chunks, step)], **post)


@pytest.mark.parametrize("aggregation", AGGREGATIONS[1:])
def test_ner_windows_match_hf_decoding_of_the_stitched_text(ner, aggregation, long_texts, hf_ner):
    """Several windows: each token's scores from the window where it is farthest from a cut, decoded once
    (Hugging Face's own stride merge decodes windows apart and splits entities at the seams)."""
    want = [hf_decoding_of_stitched_windows(hf_ner, t, aggregation) for t in long_texts]
    got = ner(long_texts, aggregation=aggregation, stride=STRIDE)
    assert min(len(g) for g in got) > 50
    assert_same_entities(got, want)
    # the seams matter on these texts: Hugging Face's stride merge answers otherwise
    assert want != [hf_ner(t, aggregation_strategy=aggregation, stride=STRIDE) for t in long_texts]


def test_ner_windows_give_whole_text_token_indices(ner, long_texts):
    """aggregation=none over windows: one result per token of the whole text, index = its position."""
    text = long_texts[0]
    tokens = ner.encoder.windows([text], 0)  # no overlap: concatenated windows = the whole text
    assert len(tokens[0]) > 2
    got = ner(text, aggregation="none", stride=STRIDE, ignore_labels=())
    content = [t for w in tokens[0] for t, s in zip(w.tokens, w.special_tokens_mask) if not s]
    assert [e["index"] for e in got] == list(range(1, len(content) + 1))
    assert [e["word"] for e in got] == content


@pytest.fixture(scope="module")
def sst2(sst2_sentences) -> list[str]:
    return sst2_sentences[::4]


@pytest.fixture(scope="module")
def hf_cls_results(cls_bundle, checkpoints, sst2) -> tuple[list, list]:
    """Hugging Face's results on SST-2, all labels and (legacy call) the best label."""
    model = AutoModelForSequenceClassification.from_pretrained(checkpoints["distilbert"]["classification"]).eval()
    hf = pipeline("text-classification", model=model, tokenizer=hf_tokenizer(cls_bundle, 128))
    return hf(sst2, top_k=None), hf(sst2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_classification_matches_hf_pipeline_on_sst2(cls_bundle, hf_cls_results, backend, sst2):
    clf = runtime.load(cls_bundle, backend=backend, precision="fp32")
    every, best = hf_cls_results
    _assert_same_labels(clf(sst2, top_k=None), every)
    _assert_same_labels([[r] for r in clf(sst2)], [[r] for r in best])


def _assert_same_labels(got: list[list[dict]], want: list[list[dict]]) -> float:
    assert [[r["label"] for r in g] for g in got] == [[r["label"] for r in w] for w in want]
    worst = max(abs(g["score"] - w["score"]) for gs, ws in zip(got, want) for g, w in zip(gs, ws))
    assert worst <= SCORE_TOLERANCE
    return worst


@pytest.fixture(scope="module")
def hf_minilm(minilm_bundle):
    model = load_checkpoint("minilm", task="classification", labels=["negative", "positive"], seed=0).model.eval()
    # Hugging Face truncates at model_max_length: the bundle's input length (its TFLite bucket, 64), as every runtime
    length = runtime.Bundle.open(minilm_bundle).input_length
    return pipeline("text-classification", model=model, tokenizer=hf_tokenizer(minilm_bundle, length))


@pytest.fixture(scope="module")
def hf_minilm_sst2(hf_minilm, sst2) -> list:
    return hf_minilm(sst2, top_k=None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_real_minilm_matches_hf_pipeline_on_sst2(minilm_bundle, hf_minilm_sst2, backend, sst2):
    clf = runtime.load(minilm_bundle, backend=backend)
    assert clf.artifact.precision == "fp32"
    got, want = clf(sst2, top_k=None), hf_minilm_sst2
    _assert_same_labels(got, want)
    assert 0.2 < sum(g[0]["label"] == "positive" for g in got) / len(got) < 0.8  # not one constant answer


def test_real_minilm_sentence_pairs_match_hf(minilm_bundle, hf_minilm):
    pairs = read_texts(DATA / "glue" / "MRPC" / "dev.tsv")[:64]
    clf = runtime.load(minilm_bundle, backend="onnx")
    got = clf(pairs, top_k=None)
    # some pairs are longer than the bundle's 64 tokens: both cut them longest-first
    want = hf_minilm([{"text": a, "text_pair": b} for a, b in pairs], top_k=None, truncation=True)
    _assert_same_labels(got, want)
    assert clf([{"text": a, "text_pair": b} for a, b in pairs[:4]], top_k=None) == got[:4]
    # the pair changes the answer: token_type_ids and the second text reach the model
    assert clf([a for a, _ in pairs[:8]], top_k=None) != got[:8]


def test_multi_label_matches_hf(multilabel_bundle, sst2):
    checkpoint, bundle = multilabel_bundle
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint).eval()
    hf = pipeline("text-classification", model=model, tokenizer=hf_tokenizer(bundle, 128))
    clf = runtime.load(bundle)
    assert clf.bundle.problem_type == "multi_label_classification" and clf.function == "sigmoid"
    got = clf(sst2[:100], top_k=None)
    _assert_same_labels(got, hf(sst2[:100], top_k=None))
    assert sum(r["score"] for r in got[0]) != pytest.approx(1.0)  # sigmoid scores, not a distribution
