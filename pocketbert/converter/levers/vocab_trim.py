"""Vocabulary trimming: keep the word pieces a task's text uses, drop the rest of the embedding table.

In a 6-layer, 384-wide model such as all-MiniLM-L6-v2 the 30,522-row embedding table is 11.7M of
the 22.7M parameters.  A model shipped for one task needs far fewer rows: SST-2's 67k training
sentences use 11.6k distinct pieces, CoNLL-2003's 14k sentences 14.1k.  Trimming keeps

* the special tokens,
* every single-character piece (``a`` and ``##a``), so that any word the original vocabulary could
  spell is still spelled, in smaller pieces, never ``[UNK]``,
* the most frequent pieces of the given text, up to ``size``,

and copies their embedding rows.  WordPiece is greedy longest-match-first, so a text whose pieces
are all kept tokenizes exactly as before (a kept piece was the longest match in the full vocabulary,
hence also in any subset of it) and the model computes exactly what it computed; other words split
into smaller, still-trained pieces.  :func:`trim` reports both fractions on the text it is given.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

import torch
from transformers import AutoTokenizer

from ..checkpoints import loading
from ..errors import ConverterInputError
from ..weights.factored_table import whole_table
from ..training import checkpoint_job as job
from ..training.distill.retokenized import LOSS, distill_retokenized
from ..training.evaluate import evaluate
from ..training.finetune import eval_length
from ..training.loop import parse_budget
from . import Lever, register


def piece_counts(tokenizer, texts) -> Counter:
    counts: Counter = Counter()
    for text in texts:
        if isinstance(text, list):  # pre-split words (NER)
            ids = tokenizer(text, is_split_into_words=True, add_special_tokens=False)["input_ids"]
        elif isinstance(text, tuple):
            ids = tokenizer(*text, add_special_tokens=False)["input_ids"]
        else:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        counts.update(ids)
    return counts


def kept_ids(tokenizer, texts, size: int) -> list[int]:
    """Ids to keep, in their original order: specials, single characters, the task text's pieces (most frequent
    first), then, while ``size`` allows, the vocabulary's own pieces in its order.

    A WordPiece vocabulary lists its pieces roughly by frequency in the corpus it was built on (after the
    reserved and single-character ones), so the fill keeps the words a task's training text happened to miss
    but its users will write (names above all, which is where trimming cost NER most)."""
    vocab = tokenizer.get_vocab()
    prefix = json.loads(tokenizer.backend_tokenizer.to_str())["model"].get("continuing_subword_prefix", "##")
    must = set(tokenizer.all_special_ids)
    must |= {i for token, i in vocab.items()
             if len(token) == 1 or (token.startswith(prefix) and len(token) == len(prefix) + 1)}
    if size < len(must):
        raise ConverterInputError(f"--size {size} is smaller than the {len(must)} pieces every vocabulary keeps "
                                  "(special tokens and single characters)", f"use --size {len(must)} or more")
    keep = set(must)
    ranked = [i for i, _ in piece_counts(tokenizer, texts).most_common()]
    # reserved slots ([unused0] …) can never be produced by the tokenizer: no use keeping them
    ranked += [i for token, i in sorted(vocab.items(), key=lambda item: item[1]) if not _reserved(token)]
    for i in ranked:
        if len(keep) >= size:
            break
        keep.add(i)
    return sorted(keep)


def needed_pieces(tokenizer, texts) -> tuple[int, int]:
    """How many pieces ``texts`` use, and how many with the special tokens and single characters every cut keeps
    (SST-2's training text with the MiniLM vocabulary: 11,570 and 13,486)."""
    used = set(piece_counts(tokenizer, texts))
    vocab = tokenizer.get_vocab()
    prefix = json.loads(tokenizer.backend_tokenizer.to_str())["model"].get("continuing_subword_prefix", "##")
    must = set(tokenizer.all_special_ids) | {i for token, i in vocab.items() if len(token) == 1 or (
        token.startswith(prefix) and len(token) == len(prefix) + 1)}
    return len(used), len(used | must)


def _reserved(token: str) -> bool:
    return token.startswith("[unused") or token.startswith("<unused")


def _trimmed_tokenizer(tokenizer, ids: list[int]):
    """The same tokenizer (normaliser, pre-tokeniser, specials, settings) over the kept pieces."""
    inverse = {token: i for token, i in tokenizer.get_vocab().items()}
    old_to_new = {old: new for new, old in enumerate(ids)}
    id_to_token = {i: t for t, i in inverse.items()}
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        path = Path(tmp) / "tokenizer.json"
        state = json.loads(path.read_text(encoding="utf-8"))
        if state["model"].get("type") != "WordPiece":
            raise ConverterInputError("vocabulary trimming handles WordPiece tokenizers, not "
                                      f"{state['model'].get('type')}", "trim a BERT-family (WordPiece) checkpoint")
        state["model"]["vocab"] = {id_to_token[old]: new for old, new in old_to_new.items()}
        for added in state.get("added_tokens", []):
            added["id"] = old_to_new[added["id"]]
        post = state.get("post_processor") or {}
        for special in (post.get("special_tokens") or {}).values():
            special["ids"] = [old_to_new[i] for i in special["ids"]]
        for key in ("cls", "sep"):  # BertProcessing layout: [token, id]
            if isinstance(post.get(key), list):
                post[key][1] = old_to_new[post[key][1]]
        path.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        (Path(tmp) / "vocab.txt").write_text("".join(f"{id_to_token[old]}\n" for old in ids), encoding="utf-8")
        config = Path(tmp) / "tokenizer_config.json"
        if config.exists():
            settings = json.loads(config.read_text(encoding="utf-8"))
            for added in (settings.get("added_tokens_decoder") or {}).copy():
                settings["added_tokens_decoder"][str(old_to_new[int(added)])] = \
                    settings["added_tokens_decoder"].pop(added)
            config.write_text(json.dumps(settings, ensure_ascii=False), encoding="utf-8")
        return AutoTokenizer.from_pretrained(tmp)


def trim(model, tokenizer, texts, size: int, check_texts=None):
    """Trim ``model`` (in place) and ``tokenizer`` to ``size`` pieces chosen on ``texts``.

    Returns (new tokenizer, report).  ``check_texts`` (default ``texts``): where the report measures
    the share of pieces kept and of texts whose tokenization is unchanged.
    """
    old_size = whole_table(model, "trim-vocab").shape[0]
    if size >= old_size:
        raise ConverterInputError(f"--size {size} is not smaller than the vocabulary ({old_size})",
                                  f"choose a size below {old_size}")
    ids = kept_ids(tokenizer, texts, size)
    new_tokenizer = _trimmed_tokenizer(tokenizer, ids)
    old_embedding = model.get_input_embeddings()
    rows = old_embedding.weight.detach()[torch.tensor(ids)].clone()
    new_embedding = torch.nn.Embedding(len(ids), rows.shape[1], padding_idx=None)
    new_embedding.weight.data.copy_(rows)
    model.set_input_embeddings(new_embedding)
    model.config.vocab_size = len(ids)
    if getattr(model.config, "pad_token_id", None) is not None:
        model.config.pad_token_id = new_tokenizer.pad_token_id
    check = list(check_texts if check_texts is not None else texts)
    kept = set(ids)
    counts = piece_counts(tokenizer, check)
    same = 0
    for text in check:
        a = piece_counts(tokenizer, [text])
        b = piece_counts(new_tokenizer, [text])
        same += sum(a.values()) == sum(b.values()) and all(i in kept for i in a)
    report = {"vocab_size_before": old_size, "vocab_size_after": len(ids),
              "pieces_kept": round(sum(c for i, c in counts.items() if i in kept) / max(1, sum(counts.values())), 5),
              "texts_tokenized_unchanged": round(same / max(1, len(check)), 5), "checked_texts": len(check)}
    return new_tokenizer, report


def trim_checkpoint(checkpoint: str, task: str, size: int, out: Path, *, data_dir=None, fp16: bool = False,
                    retune: str | None = None, retune_lr: float = 3e-5, threads: int | None = None,
                    train_limit: int | None = None, overwrite: bool = False, log=print,
                    dev: str | None = None, source_scores: dict | None = None) -> tuple[Path, dict]:
    """``pocketbert-convert trim-vocab``: trim a checkpoint to ``task``'s text and write it, with the dev
    score before and after in training.json and the model card.

    ``retune`` (a budget such as ``15m``): then distil the trimmed model from the untrimmed one on the
    task's training text (:mod:`.distill.retokenized`), which wins back what the new segmentation of
    rare words costs (names in NER above all).  ``dev``: the dev file, when ``task`` is a training file;
    ``source_scores``: the checkpoint's dev scores on it, when known."""
    job.begin(out, overwrite, threads)
    budget = parse_budget(retune) if retune else None
    train, dev = job.splits(task, data_dir, train_limit, dev)
    loaded = loading.load(checkpoint)
    teacher = loading.load(checkpoint).model if budget else None  # the untrimmed model, to distil from
    trimmed = _Trimmed(loaded, dev)
    before = source_scores or trimmed.score(loaded.tokenizer)
    tokenizer, report = trim(loaded.model, loaded.tokenizer, train.texts, size, check_texts=dev.texts)
    after = trimmed.score(tokenizer)
    metric = train.metric
    log(f"vocabulary {report['vocab_size_before']} -> {report['vocab_size_after']} pieces; dev {metric} "
        f"{before[metric]:.2f} -> {after[metric]:.2f}; {report['texts_tokenized_unchanged']:.1%} of dev texts "
        "tokenize unchanged")
    if budget:
        report["retune"], after = _retune(teacher, loaded, tokenizer, train, trimmed=trimmed, budget=budget,
                                          lr=retune_lr, scores=after, log=log)
    if fp16:
        job.round_to_fp16(loaded.model)
        after = trimmed.score(tokenizer)
        log(f"dev {metric} with the weights rounded to float16: {after[metric]:.2f}")
    record = job.input_record(loaded.checkpoint, "vocab-trim", train, dev)
    record["vocab_trim"] = {**report, "size": size, "texts": train.name, "fp16": fp16,
                            "dev_before": job.rounded(before), "dev_after": job.rounded(after)}
    job.record_shipped(record, f"shipped: vocabulary trimmed to {report['vocab_size_after']}"
                       + (", re-tuned" if budget else "") + (", fp16" if fp16 else ""), job.rounded(after))
    path = job.write(loaded.model, tokenizer, out, overwrite=overwrite, record=record, fp16=fp16,
                     transforms=job.saved_transforms(loaded.config))
    return path, record


class _Trimmed:
    """Dev scores of one model under a tokenizer (the original's, then the trimmed one's)."""

    def __init__(self, loaded, dev):
        self.loaded, self.dev, self.length = loaded, dev, eval_length(loaded)

    def score(self, tokenizer) -> dict[str, float]:
        features = self.dev.encode(tokenizer, self.length, self.loaded.labels)
        return evaluate(self.loaded.model, features, input_names=self.loaded.family.input_names)


def _retune(teacher, loaded, tokenizer, train, trimmed: _Trimmed, budget, lr: float, scores: dict, log):
    """Distil the trimmed model from the untrimmed one; returns the record and the new dev scores."""
    names = loaded.family.input_names
    run = distill_retokenized(teacher, loaded.model, train.encode(loaded.tokenizer, 128, loaded.labels),
                              train.encode(tokenizer, 128, loaded.labels), budget=budget, lr=lr,
                              teacher_inputs=names, student_inputs=names,
                              description="re-tune the trimmed model on the untrimmed one's logits")
    after = trimmed.score(tokenizer)
    metric = train.metric
    log(f"re-tuned by distillation from the untrimmed model ({run.steps} steps, {run.seconds:.0f} s): dev "
        f"{metric} {scores[metric]:.2f} -> {after[metric]:.2f}")
    record = {"budget": budget.to_json(), "lr": lr, "loss": LOSS, "steps": run.steps,
              "seconds": round(run.seconds, 1), "dev_before": job.rounded(scores)}
    return record, after



def _run_lever(step) -> Path:
    path, _ = trim_checkpoint(step.source, step.task, step.setting, step.out, data_dir=step.data_dir,
                              threads=step.threads, train_limit=step.train_limit, overwrite=True, log=step.log,
                              dev=step.dev, source_scores=step.source_scores)
    return path


def _choose(shape, goal):
    """Sentence tasks only (a cut cost NER names its training text missed): every piece the training text uses and
    a third more from the vocabulary's own order, in whole thousands, and never fewer than those pieces with the
    special tokens and single characters (SST-2: 11,570 pieces used, 13,486 with those, 16,000 kept)."""
    if goal.small_enough(shape) or shape.task == "ner" or not goal.pieces_needed:
        return None
    used, floor = goal.pieces_needed
    keep = max(-(-used * 4 // 3000), -(-floor // 1000)) * 1000
    return keep if keep < shape.vocab else None


register(Lever("trim-vocab", "the word table's rows: every piece the training text uses is kept, then the "
               "vocabulary's own order", order=10, trains=False, records_score=True, setting="pieces",
               reshape=lambda shape, pieces: shape.trimmed(pieces), choose=_choose, run=_run_lever))
