"""Texts -> token rows, with the bundle's ``tokenizer.json`` run by the ``tokenizers`` library.

This is the same Rust tokenizer Hugging Face's fast tokenizers wrap, so ids, offsets and special-token
masks equal what the converter verified with.  The saved file may carry the padding/truncation of
whoever saved it; both are cleared and set here: classification truncates (``longest_first``, as
Hugging Face does for pairs) to the model's maximum, NER cuts long texts into overlapping windows.
Each configured tokenizer is built once and only read afterwards, so one encoder serves many threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Encoding, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from .errors import BundleError, InputError

#: a text, or a (text_a, text_b) pair for sentence-pair classification
Text = str | tuple[str, str]


@dataclass(frozen=True)
class Texts:
    """Validated inputs: ``items[i]`` is ``(text_a, text_b or None)``; ``single`` if one was given bare."""

    items: list[tuple[str, str | None]]
    single: bool


def _check_text(value, where: str) -> str:
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(f"{where} contains a lone surrogate U+{ord(value[exc.start]):04X} at character "
                                 f"{exc.start}: it is not valid Unicode text",
                                 "decode the source bytes with errors='replace' (or fix the text) before "
                                 "passing it") from None
        return value
    if isinstance(value, (bytes, bytearray)):
        raise InputError(f"{where} is bytes, not text", "decode it first, e.g. data.decode('utf-8')")
    raise InputError(f"{where} is {type(value).__name__}, not a string", "pass str texts (use '' for an empty text)")


def _item(value, where: str, pairs: bool) -> tuple[str, str | None]:
    if isinstance(value, dict) and pairs:  # Hugging Face's {"text": …, "text_pair": …}
        if "text" not in value:
            raise InputError(f"{where} is a dict without a 'text' key", "use {'text': a, 'text_pair': b}")
        b = value.get("text_pair")
        return _check_text(value["text"], where), None if b is None else _check_text(b, f"{where} text_pair")
    if isinstance(value, tuple) and pairs:
        if len(value) != 2:
            raise InputError(f"{where} is a tuple of {len(value)} items; a sentence pair has 2",
                             "pass (text_a, text_b), or a list for a batch of texts")
        return _check_text(value[0], f"{where}[0]"), _check_text(value[1], f"{where}[1]")
    if isinstance(value, (tuple, dict)):
        raise InputError(f"{where} is a {type(value).__name__}, but this task takes single texts, not pairs",
                         "pass a string or a list of strings")
    return _check_text(value, where), None


def validate(inputs, *, pairs: bool) -> Texts:
    """One text, one pair (tuple or {"text", "text_pair"}) or a list of them -> :class:`Texts`.

    A tuple is always a sentence pair and a list always a batch, so ``("a", "b")`` is never ambiguous.
    """
    if inputs is None:
        raise InputError("no input: got None", "pass a string or a list of strings")
    if isinstance(inputs, (str, bytes, bytearray, tuple, dict)):
        return Texts([_item(inputs, "the input", pairs)], single=True)
    if not isinstance(inputs, Iterable):
        raise InputError(f"the input is {type(inputs).__name__}, not text", "pass a string or a list of strings")
    return Texts([_item(v, f"input {i}", pairs) for i, v in enumerate(inputs)], single=False)


class TextEncoder:
    """The bundle's tokenizer, configured for the model's maximum length."""

    def __init__(self, base: Tokenizer, settings: dict, max_length: int):
        base.no_padding()
        base.no_truncation()
        self.max_length = max_length
        self.vocab_size = base.get_vocab_size(with_added_tokens=True)
        special = settings.get("special_tokens") or {}

        def special_id(name: str, fallback: str) -> int | None:
            entry = special.get(name)
            return entry["id"] if entry else base.token_to_id(fallback)

        self.pad_id = special_id("pad", "[PAD]") or 0
        self.unk_id = special_id("unk", "[UNK]")
        self.cls_id = special_id("cls", "[CLS]")
        self.sep_id = special_id("sep", "[SEP]")
        # Hugging Face's rule: a tokenizer with a continuing-subword prefix (WordPiece "##") knows
        # where words end; others fall back to a whitespace heuristic.
        self.word_aware = bool(getattr(base.model, "continuing_subword_prefix", None))
        self._decoder = base.decoder
        self._base = base
        self._truncating = self._configured(max_length, stride=0)
        self._windowing: dict[int, Tokenizer] = {}
        self._lock = threading.Lock()
        self.specials_added = base.num_special_tokens_to_add(is_pair=False)

    @classmethod
    def from_file(cls, path: Path, settings: dict, max_length: int) -> TextEncoder:
        """From ``tokenizer.json`` (what the runtime uses)."""
        try:
            base = Tokenizer.from_file(str(path))
        except Exception as exc:  # the Rust parser's message says what is wrong with the JSON
            raise BundleError(f"{path.name} cannot be loaded by the tokenizers library: {exc}",
                              "copy the bundle again, or convert again") from exc
        return cls(base, settings, max_length)

    @classmethod
    def from_vocab(cls, path: Path, settings: dict, max_length: int) -> TextEncoder:
        """From ``vocab.txt`` plus the manifest's ``tokenizer`` settings: BERT's WordPiece pipeline as an
        app without tokenizer.json rebuilds it (docs/manifest.md §5, the Android path).  It must equal
        the ``tokenizer.json`` path; the golden-vector tests hold both to Hugging Face's output."""
        if settings.get("type", "wordpiece") != "wordpiece":
            raise BundleError(f"vocab.txt alone describes a WordPiece tokenizer, not {settings['type']!r}",
                              "use tokenizer.json")
        with open(path, encoding="utf-8") as f:
            vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
        special = {name: entry["token"] for name, entry in settings["special_tokens"].items()}
        prefix = settings.get("continuing_subword_prefix", "##")
        base = Tokenizer(models.WordPiece(vocab, unk_token=special["unk"], continuing_subword_prefix=prefix,
                                          max_input_chars_per_word=settings.get("max_input_chars_per_word", 100)))
        base.normalizer = normalizers.BertNormalizer(clean_text=settings.get("clean_text", True),
                                                     handle_chinese_chars=settings.get("tokenize_chinese_chars", True),
                                                     strip_accents=settings["strip_accents"],
                                                     lowercase=settings["do_lower_case"])
        base.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        cls_token, sep_token = special["cls"], special["sep"]
        base.post_processor = processors.TemplateProcessing(
            single=f"{cls_token}:0 $A:0 {sep_token}:0", pair=f"{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
            special_tokens=[(cls_token, vocab[cls_token]), (sep_token, vocab[sep_token])])
        base.decoder = decoders.WordPiece(prefix=prefix)
        # Special tokens typed into the text are matched whole, as Hugging Face's tokenizers do.
        base.add_special_tokens([AddedToken(t, special=True) for t in special.values()])
        return cls(base, settings, max_length)

    def _configured(self, max_length: int, stride: int) -> Tokenizer:
        tok = Tokenizer.from_str(self._base.to_str())
        tok.no_padding()
        tok.enable_truncation(max_length, stride=stride, strategy="longest_first")
        return tok

    # --- encoding ----------------------------------------------------------------------------
    def encode(self, items: list[tuple[str, str | None]], offsets: bool = True) -> list[Encoding]:
        """Texts or pairs -> one encoding each, truncated to the maximum (``overflowing`` non-empty if cut).
        ``offsets=False``: character offsets are not tracked (they are then meaningless), which makes a
        batch about a quarter faster; ids, type ids and truncation are the same."""
        if not items:
            return []
        if len(items) == 1:  # encode_batch's thread-pool hand-off costs more than one short text
            a, b = items[0]
            return [self._truncating.encode(a, b)]
        tok = self._truncating
        batch = tok.encode_batch if offsets else getattr(tok, "encode_batch_fast", tok.encode_batch)  # tokenizers ≥ 0.21
        if all(b is None for _, b in items):
            return batch([a for a, _ in items])
        return batch([a if b is None else (a, b) for a, b in items])

    def windows(self, texts: list[str], stride: int) -> list[list[Encoding]]:
        """Each text -> its windows of at most ``max_length`` tokens, consecutive windows sharing ``stride``
        tokens (the tokenizers/Hugging Face overflow rule; one window when the text fits)."""
        if not texts:
            return []
        content = self.max_length - self.specials_added
        if not 0 <= stride < content:
            raise InputError(f"stride {stride} must be ≥ 0 and smaller than the {content} text tokens of a window",
                             f"pass a stride between 0 and {content - 1}")
        with self._lock:
            tok = self._windowing.get(stride)
            if tok is None:
                tok = self._windowing[stride] = self._configured(self.max_length, stride)
        encodings = [tok.encode(texts[0])] if len(texts) == 1 else tok.encode_batch(texts)
        return [[enc, *enc.overflowing] for enc in encodings]

    def length(self, text: str) -> int:
        """Tokens ``text`` has before any truncation, specials included."""
        return len(self._base.encode(text).ids)

    # --- tokens back to text ---------------------------------------------------------------
    def detokenize(self, tokens: list[str]) -> str:
        """Hugging Face's ``convert_tokens_to_string``: the tokenizer's decoder, else a space join."""
        return self._decoder.decode(tokens) if self._decoder is not None else " ".join(tokens)
