"""Vocabulary trimming: exact on text made of kept pieces, never [UNK] where the original spelled a word."""

from __future__ import annotations

import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.data import load_task
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.levers.vocab_trim import trim

from .conftest import DATA


@pytest.fixture
def trimmed(checkpoints):
    loaded = loading.load(str(checkpoints["bert"]["classification"]))
    original = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    texts = load_task("glue:sst2", "dev", DATA).texts
    tokenizer, report = trim(loaded.model, loaded.tokenizer, texts[:400], 6000, check_texts=texts[:400])
    return loaded, original, tokenizer, report, texts


def test_trimmed_model_is_exact_on_its_text(trimmed, checkpoints):
    loaded, _, tokenizer, report, texts = trimmed
    assert report["vocab_size_after"] == loaded.model.config.vocab_size <= 6000
    assert report["pieces_kept"] == 1.0 and report["texts_tokenized_unchanged"] == 1.0
    reference = loading.load(str(checkpoints["bert"]["classification"]))
    a = reference.tokenizer(texts[:32], padding=True, return_tensors="pt")
    b = tokenizer(texts[:32], padding=True, return_tensors="pt")
    assert torch.equal(a["attention_mask"], b["attention_mask"])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(**b).logits, reference.model(**a).logits, rtol=0, atol=1e-6)


def test_unseen_words_split_into_pieces_not_unk(trimmed):
    _, _, tokenizer, _, _ = trimmed
    pieces = tokenizer.tokenize("Zyzzyva quokkas photosynthesize")
    assert tokenizer.unk_token not in pieces and len(pieces) > 3
    assert tokenizer.decode(tokenizer("zyzzyva quokkas")["input_ids"], skip_special_tokens=True) == "zyzzyva quokkas"


def test_trimmed_checkpoint_round_trips(trimmed, tmp_path):
    loaded, _, tokenizer, _, texts = trimmed
    loaded.model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    again = loading.load(str(tmp_path))
    assert len(again.tokenizer) == again.model.config.vocab_size <= 6000
    assert again.tokenizer.tokenize(texts[0]) == tokenizer.tokenize(texts[0])


def test_bad_sizes(checkpoints):
    loaded = loading.load(str(checkpoints["bert"]["classification"]))
    with pytest.raises(ConverterInputError, match="smaller than"):
        trim(loaded.model, loaded.tokenizer, ["a text"], 50)
    with pytest.raises(ConverterInputError, match="not smaller"):
        trim(loaded.model, loaded.tokenizer, ["a text"], 40000)


def test_room_left_by_the_text_is_filled_in_the_vocabularys_order_without_reserved_slots(checkpoints):
    from pocketbert.converter.levers.vocab_trim import kept_ids

    tokenizer = loading.load(str(checkpoints["bert"]["classification"])).tokenizer
    vocab = tokenizer.get_vocab()
    text_only = kept_ids(tokenizer, ["a gripping film ."], 2500)
    assert len(text_only) == 2500
    reserved = {i for token, i in vocab.items() if token.startswith("[unused")}
    assert reserved and not reserved & set(text_only)
    text = set(tokenizer("a gripping film .", add_special_tokens=False)["input_ids"])
    assert text <= set(text_only) and vocab["the"] in text_only
    # the fill is the vocabulary's first pieces (its most frequent words): every piece left out comes after it
    dropped = [i for token, i in vocab.items() if i not in text_only and not token.startswith("[unused")]
    kept_words = [i for token, i in vocab.items() if i in text_only and i not in text and len(token.lstrip("#")) > 1]
    assert max(kept_words) < min(dropped)
