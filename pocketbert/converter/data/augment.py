"""More distillation text from a small task set: TinyBERT's data augmentation (Jiao et al. 2020, §3.1, Alg. 1).

A student distilled on a few thousand sentences sees each of them ten times or more in a recovery budget, and
the extra passes buy little (a WNUT-17 recovery's second half: +0.07 F1).  TinyBERT's answer is new text, not
new passes: copies of each training example with words replaced by near neighbours, labelled by the teacher's
own outputs (distillation needs no gold label on them).  Per word, with probability ``p`` (TinyBERT: 0.4), one
of its ``k`` nearest neighbours (TinyBERT: 15); ``copies`` variants per example (TinyBERT: 20).

Where the neighbours come from differs from the paper, because what it used is not here: TinyBERT asks BERT's
masked-LM head for single-piece words and GloVe for the rest; a fine-tuned teacher has no MLM head and no GloVe
ships offline.  The neighbours are the teacher's own word-piece embeddings (cosine, whole-word pieces only), so
single-piece words are replaced and multi-piece words kept.  For NER a second, label-safe move is added: an
entity mention is replaced, with probability ``p``, by another mention of the same type from the training set
(mention replacement, Dai & Adel 2020), its IOB2 tags rewritten to the new length.

Labels are carried over (a class, or a word's tag); they matter only to a hard-label loss, off by default.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import torch

from .features import TaskData

#: TinyBERT's settings (Jiao et al. 2020, §4.2): replacement probability, neighbours per word, copies per example
P_REPLACE, NEIGHBOURS, COPIES = 0.4, 15, 20
WORD = re.compile(r"[^\W\d_]{2,}")  # letters only: numbers, punctuation and @handles stay as they are


@dataclass
class Neighbours:
    """``of(word)``: the ``k`` whole-word vocabulary pieces nearest ``word``'s own piece, or () for a word that
    is not one piece of the vocabulary."""

    table: dict[str, tuple[str, ...]]
    lowercase: bool

    def of(self, word: str) -> tuple[str, ...]:
        return self.table.get(word.lower() if self.lowercase else word, ())


@torch.no_grad()
def word_vectors(table: torch.nn.Module) -> torch.Tensor:
    """The input vector of every vocabulary id that ``table`` (a model's input embeddings) gives, whatever form
    it takes (plain or factored)."""
    return table(torch.arange(table.num_embeddings, device=next(table.parameters()).device))


def neighbours(tokenizer, embeddings: torch.Tensor, words, k: int = NEIGHBOURS) -> Neighbours:
    """The ``k`` nearest whole-word pieces (cosine of the teacher's input embeddings) of each of ``words``."""
    vocab = tokenizer.get_vocab()
    lowercase = _lowercases(tokenizer)
    candidates = sorted(i for piece, i in vocab.items() if WORD.fullmatch(piece) and i < len(embeddings))
    pieces = {i: piece for piece, i in vocab.items()}
    wanted = sorted({w.lower() if lowercase else w for w in words} & {pieces[i] for i in candidates})
    if not wanted:
        return Neighbours({}, lowercase)
    table = torch.nn.functional.normalize(embeddings.detach().float(), dim=1)
    keys = table[candidates]
    found: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(wanted), 1024):
        chunk = wanted[start:start + 1024]
        sims = table[[vocab[w] for w in chunk]] @ keys.T
        top = sims.topk(min(k + 1, len(candidates)), dim=1).indices.tolist()
        for word, row in zip(chunk, top):
            found[word] = tuple(p for p in (pieces[candidates[j]] for j in row) if p != word)[:k]
    return Neighbours(found, lowercase)


def augmented(data: TaskData, tokenizer, table: torch.nn.Module, *, copies: int, seed: int = 0,
              source: str = "teacher word-piece embeddings") -> TaskData:
    """``data`` with ``copies`` variants of each example, the neighbours taken from ``table`` (a model's input
    embeddings, numbered as ``tokenizer`` numbers its pieces); ``source`` says whose table, for the record."""
    words = {w for text in data.texts for part in _parts(text) for w in WORD.findall(part)}
    near = neighbours(tokenizer, word_vectors(table), words)
    return augment(data, near, copies=copies, seed=seed, source=source)


def augment(data: TaskData, near: Neighbours, *, copies: int = COPIES, p: float = P_REPLACE,
            seed: int = 0, source: str = "teacher word-piece embeddings") -> TaskData:
    """``data`` followed by up to ``copies`` distinct variants of each example (fewer where an example has few
    replaceable words); each variant keeps its example's label."""
    rng = random.Random(seed)
    mentions = _mentions(data) if data.kind == "ner" else {}
    texts, labels = list(data.texts), None if data.labels is None else list(data.labels)
    made = 0
    for index, text in enumerate(data.texts):
        label = None if data.labels is None else data.labels[index]
        seen = {_key(text)}
        for _ in range(copies):
            new_text, new_label = _variant(data.kind, text, label, near=near, mentions=mentions, p=p, rng=rng)
            if _key(new_text) in seen:
                continue
            seen.add(_key(new_text))
            texts.append(new_text)
            made += 1
            if labels is not None:
                labels.append(new_label)
    details = dict(data.details, augmented={"originals": len(data), "variants": made, "copies": copies, "p": p,
                                            "neighbours": source, "seed": seed})
    return TaskData(data.name, data.kind, data.split, data.path, texts=texts, labels=labels,
                    label_names=data.label_names, metric=data.metric, details=details,
                    named_labels=data.named_labels)


def described(data: TaskData) -> str | None:
    """What :func:`augment` added to ``data``, in a line for the log; None if it is not augmented."""
    made = data.details.get("augmented")
    if not made:
        return None
    return (f"training text: {made['originals']:,} examples and {made['variants']:,} variants of them "
            f"(TinyBERT's augmentation, at most {made['copies']} per example)")


def _parts(text) -> list[str]:
    return list(text) if isinstance(text, (list, tuple)) else [text]


def _variant(kind, text, label, *, near: Neighbours, mentions, p: float, rng: random.Random):
    if kind == "ner":
        return _ner_variant(text, label, near=near, mentions=mentions, p=p, rng=rng)
    if isinstance(text, tuple):
        return tuple(_replace_words(t, near, p, rng) for t in text), label
    return _replace_words(text, near, p, rng), label


def _replace_words(text: str, near: Neighbours, p: float, rng: random.Random) -> str:
    return WORD.sub(lambda m: _swap(m.group(0), near, p, rng), text)


def _swap(word: str, near: Neighbours, p: float, rng: random.Random) -> str:
    options = near.of(word) if WORD.fullmatch(word) else ()
    if not options or rng.random() >= p:
        return word
    return _cased_like(word, rng.choice(options))


def _cased_like(word: str, new: str) -> str:
    if len(word) > 1 and word.isupper():
        return new.upper()
    return new[:1].upper() + new[1:] if word[:1].isupper() else new


def _ner_variant(words, tags, *, near: Neighbours, mentions, p: float, rng: random.Random):
    """Mentions swapped for others of their type, then the words outside any mention replaced by neighbours."""
    out_words, out_tags = [], []
    for start, end, kind in _spans(tags):
        if kind is not None and mentions.get(kind) and rng.random() < p:
            new = list(rng.choice(mentions[kind]))
            out_words += new
            out_tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(new) - 1)
        elif kind is not None:
            out_words += words[start:end]
            out_tags += tags[start:end]
        else:
            out_words += [_swap(w, near, p, rng) for w in words[start:end]]
            out_tags += tags[start:end]
    return out_words, out_tags


def _spans(tags) -> list[tuple[int, int, str | None]]:
    """IOB2 tags as (start, end, type) runs: one per mention, and one per word outside any (type None)."""
    spans: list[tuple[int, int, str | None]] = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-") and spans and spans[-1][2] == tag[2:] and spans[-1][1] == i:
            spans[-1] = (spans[-1][0], i + 1, tag[2:])
        else:
            spans.append((i, i + 1, None if tag == "O" else tag[2:]))
    return spans


def _mentions(data: TaskData) -> dict[str, list[tuple[str, ...]]]:
    found: dict[str, set] = {}
    for words, tags in zip(data.texts, data.labels or []):
        for start, end, kind in _spans(tags):
            if kind is not None:
                found.setdefault(kind, set()).add(tuple(words[start:end]))
    return {kind: sorted(spans) for kind, spans in found.items()}


def _key(text):
    return tuple(text) if isinstance(text, list) else text


def _lowercases(tokenizer) -> bool:
    """Whether the tokenizer lower-cases its input (BERT uncased): then neighbours are looked up lower-cased."""
    probe = "Zq"
    return tokenizer.tokenize(probe) == tokenizer.tokenize(probe.lower())
