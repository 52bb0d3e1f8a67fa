"""The texts ``web-peers`` feeds the pages, and how their answers are held to the Python runtime's on the same file."""

from __future__ import annotations

import json

import numpy as np

from .web_peers_plan import DEV_SETS, Cell


def dev_texts(task: str, count: int, data_dir: str | None) -> list[str]:
    """The dev set's first ``count`` texts (SST-2 sentences; CoNLL-2003 sentences, words joined by spaces)."""
    from pocketbert.converter.data import load_task

    data = load_task(DEV_SETS[task], "dev", data_dir)
    return [" ".join(t) if isinstance(t, list) else t for t in data.texts[:count]]


def text_of_length(encoder, words: list[str], length: int) -> str:
    """A text the bundle's tokenizer turns into exactly ``length`` tokens (specials included)."""
    text, used = "", 0
    while used < len(words):
        longer = f"{text} {words[used]}".strip()
        if encoder.length(longer) > length:
            break
        text, used = longer, used + 1
    while encoder.length(text) < length:  # "a" is one token in every uncased or cased BERT vocabulary
        text = f"{text} a".strip()
    return text


def python_answers(cell: Cell, texts: list[str]) -> list:
    """What the Python runtime answers on the same file, in the form the page gives it."""
    from pocketbert import runtime
    from pocketbert.runtime import batching

    pipe = runtime.load(cell.bundle, cell.recipe.split(":")[0], recipe=cell.recipe, threads=1)
    if cell.task == "classification":
        logits = pipe.logits(texts)
        return [pipe.labels[int(i)] for i in np.argmax(logits, axis=-1)]
    if cell.runtime != "transformers":
        return [[[e["entity_group"], e["start"], e["end"]] for e in pipe(text, aggregation="simple")]
                for text in texts]
    out = []  # transformers.js's form: [token index, label] of every non-O, non-special token
    for text in texts:
        (enc,) = pipe.encoder.encode([(text, None)])
        feeds = batching.pad([(enc.ids, enc.type_ids)], pipe.bundle.input_names, pipe.encoder.pad_id)
        best = np.argmax(pipe.backend.run(feeds)[0], axis=-1)
        out.append([[i, pipe.labels[int(b)]] for i, b in enumerate(best)
                    if not enc.special_tokens_mask[i] and pipe.labels[int(b)] != "O"])
    return out


def unk_positions(cell: Cell, texts: list[str]) -> list[set[int]]:
    """Token positions transformers.js leaves out of its NER answer ([UNK] decodes to nothing there)."""
    from pocketbert import runtime

    pipe = runtime.load(cell.bundle, "onnx", recipe=cell.recipe, threads=1)
    unk = pipe.encoder.unk_id
    return [{i for i, t in enumerate(pipe.encoder.encode([(text, None)])[0].ids) if t == unk} for text in texts]


def agreement(cell: Cell, page_answers: list, python: list, texts: list[str]) -> dict:
    if cell.runtime == "transformers" and cell.task == "ner":
        unks = unk_positions(cell, texts)
        page_answers = [[t for t in a if t[0] not in u] for a, u in zip(page_answers, unks)]
        python = [[t for t in a if t[0] not in u] for a, u in zip(python, unks)]
    same = [json.dumps(a) == json.dumps(b) for a, b in zip(page_answers, python)]
    differ = [i for i, s in enumerate(same) if not s]
    what = {"classification": "top label", "ner": "entities (label, code-point span)"}[cell.task]
    if cell.runtime == "transformers" and cell.task == "ner":
        what = "every token's label (transformers.js gives no spans)"
    # NER: how many texts had something to agree on (an entity, or a non-O token), so agreement is not vacuous
    found = sum(1 for a in python if a) if cell.task == "ner" else len(python)
    return {"texts": len(same), "agree": sum(same), "fraction": sum(same) / len(same) if same else None,
            "compared": what, "with_answers": found, "first_differences": differ[:5]}
