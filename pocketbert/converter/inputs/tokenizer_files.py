"""The tokenizer as a bundle carries it: files every reader can load, and the manifest's description."""

from __future__ import annotations

import json
from pathlib import Path

from pocketbert.runtime.contract import TOKENIZER_CONFIG_FILE, TOKENIZER_FILE, VOCAB_FILE


def write_tokenizer(tokenizer, directory: Path, max_length: int) -> None:
    # tokenizer.json for `tokenizers` (the runtime), tokenizer_config.json so that transformers'
    # AutoTokenizer loads the bundle as the same class, vocab.txt for plain WordPiece (Android).
    tokenizer.save_pretrained(directory)
    # A checkpoint's tokenizer.json can carry fixed truncation/padding (e.g. pad everything to 128),
    # which Tokenizer.from_file would silently apply; the bundle's length limit is max_length.
    fast = directory / TOKENIZER_FILE
    if fast.exists():
        state = json.loads(fast.read_text(encoding="utf-8"))
        state["truncation"] = state["padding"] = None
        fast.write_text(json.dumps(state, ensure_ascii=False, indent=2), encoding="utf-8")
    config = directory / TOKENIZER_CONFIG_FILE
    if config.exists():
        state = json.loads(config.read_text(encoding="utf-8"))
        state["model_max_length"] = max_length
        config.write_text(json.dumps(state, ensure_ascii=False, indent=2), encoding="utf-8")
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    (directory / VOCAB_FILE).write_text("".join(f"{token}\n" for token, _ in vocab), encoding="utf-8")


def tokenizer_settings(tokenizer, max_length: int) -> dict:
    """The manifest's ``tokenizer`` record: what a reader without `tokenizers` (Android, the web) needs."""
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    normalizer = state.get("normalizer") or {}
    model = state.get("model") or {}
    lowercase = normalizer.get("lowercase")
    strip_accents = normalizer.get("strip_accents")
    return {
        "type": model.get("type", "unknown").lower(),
        "vocab_file": VOCAB_FILE,
        "tokenizer_file": TOKENIZER_FILE,
        "vocab_size": len(tokenizer),
        "do_lower_case": bool(lowercase),
        # BERT semantics: strip_accents=None means "follow lower-casing"
        "strip_accents": bool(lowercase if strip_accents is None else strip_accents),
        "clean_text": bool(normalizer.get("clean_text", True)),
        "tokenize_chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
        "continuing_subword_prefix": model.get("continuing_subword_prefix", "##"),
        "max_input_chars_per_word": model.get("max_input_chars_per_word", 100),
        "special_tokens": {name: {"token": getattr(tokenizer, f"{name}_token"),
                                  "id": getattr(tokenizer, f"{name}_token_id")}
                           for name in ("unk", "cls", "sep", "pad", "mask")
                           if getattr(tokenizer, f"{name}_token", None) is not None},
        "max_sequence_length": max_length,
    }
