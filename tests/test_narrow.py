"""narrow: narrower feed-forward blocks whose output projections are refitted by least squares."""

from __future__ import annotations

import json

import pytest
import torch

from pocketbert.converter.checkpoints import loading
from pocketbert.converter.errors import ConverterInputError
from pocketbert.converter.families import families
from pocketbert.converter.families.base import FeedForward
from pocketbert.converter.levers.narrow import NarrowOptions, gram, narrow_block, narrow_checkpoint, refit
from pocketbert.converter.training.loop import parse_budget

from .conftest import DATA, build_checkpoint

FAMILY_NAMES = [f.name for f in families()]


def _activations(seed: int = 0, tokens: int = 400, units: int = 12) -> torch.Tensor:
    """ReLU activations of units that read a few shared directions, as a trained block's do (float64): what
    one unit carries, others partly carry too."""
    torch.manual_seed(seed)
    return (torch.randn(tokens, 4) @ torch.randn(4, units) + 0.1 * torch.randn(tokens, units)).relu().double()


def _gram(h: torch.Tensor) -> torch.Tensor:
    h1 = torch.cat([h, h.new_ones(len(h), 1)], 1)
    return h1.T @ h1


def test_refit_is_the_least_squares_fit_of_the_wide_output():
    h = _activations()
    weight, bias = torch.randn(5, 12).double(), torch.randn(5).double()
    keep = torch.tensor([1, 4, 6, 9, 10, 11])
    fitted_w, fitted_b = refit(weight, bias, _gram(h), keep, ridge=0.0)
    target = h @ weight.T + bias
    design = torch.cat([h[:, keep], h.new_ones(len(h), 1)], 1)
    reference = torch.linalg.lstsq(design, target).solution.T  # [5, 7]: weights, then the bias
    torch.testing.assert_close(fitted_w, reference[:, :-1], rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(fitted_b, reference[:, -1], rtol=1e-8, atol=1e-8)
    dropped = ((h[:, keep] @ weight[:, keep].T + bias - target) ** 2).sum()
    refitted = ((h[:, keep] @ fitted_w.T + fitted_b - target) ** 2).sum()
    assert refitted < 0.5 * dropped  # what refitting buys over dropping the units


def test_keeping_every_unit_gives_the_block_back():
    h = _activations(1)
    weight, bias = torch.randn(5, 12).double(), torch.randn(5).double()
    fitted_w, fitted_b = refit(weight, bias, _gram(h), torch.arange(12), ridge=0.0)
    torch.testing.assert_close(fitted_w, weight, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(fitted_b, bias, rtol=1e-6, atol=1e-6)
    # the default ridge moves weights along directions the text never excites, not the block's output on it
    fitted_w, fitted_b = refit(weight, bias, _gram(h), torch.arange(12))
    target = h @ weight.T + bias
    assert ((h @ fitted_w.T + fitted_b - target).norm() / target.norm()).item() < 1e-3


def test_the_units_kept_are_those_contributing_most_to_the_output():
    torch.manual_seed(0)
    up, down = torch.nn.Linear(4, 6), torch.nn.Linear(6, 3)
    with torch.no_grad():
        down.weight.copy_(torch.ones(3, 6) * torch.tensor([1.0, 5.0, 0.1, 3.0, 0.2, 4.0]))
    h = torch.ones(50, 6, dtype=torch.float64)  # every unit equally active: the output weights decide
    keep = narrow_block(FeedForward("block", 0, up, down), 3, _gram(h))
    assert keep.tolist() == [1, 3, 5]
    assert (up.out_features, up.weight.shape, down.in_features, down.weight.shape) == (3, (3, 4), 3, (3, 3))


@pytest.mark.parametrize("family_name", FAMILY_NAMES)
def test_every_family_narrows_and_its_checkpoint_loads_narrow(family_name, tokenizer, tmp_path):
    source = build_checkpoint(tmp_path / "wide", family_name, tokenizer, labels=("negative", "positive"))
    options = NarrowOptions(width=24, texts=32, train_limit=64, data_dir=DATA)
    path, record = narrow_checkpoint(str(source), "glue:sst2", tmp_path / "narrow", options, log=lambda *_: None)
    loaded = loading.load(str(path))
    family = loaded.family
    blocks = family.feed_forwards(loaded.model)
    assert getattr(loaded.config, family.ffn_width_key) == 24
    assert blocks and all(b.up.out_features == 24 and b.down.in_features == 24 for b in blocks)
    assert record["narrow"]["width_before"] == 64 and record["narrow"]["feed_forward_blocks"] == len(blocks)
    assert json.loads((path / "training.json").read_text())["narrow"] == record["narrow"]
    batch = loaded.tokenizer(["a gripping, funny film", "dull"], padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = loaded.model(**{k: batch[k] for k in family.input_names}).logits
    assert logits.shape == (2, 2) and torch.isfinite(logits).all()


def test_each_block_is_refitted_on_the_narrowed_model_beneath_it(checkpoints):
    """The refit of block k reads block k's activations after the blocks below were narrowed, and makes that
    block's output closer to the wide model's than dropping its units would."""
    wide = loading.load(str(checkpoints["bert"]["ner"]))
    narrow = loading.load(str(checkpoints["bert"]["ner"]))
    texts = ["EU rejects German call to boycott British lamb .", "Peter Blackburn", "BRUSSELS 1996-08-22"] * 4
    batch = wide.tokenizer(texts, padding=True, return_tensors="pt")
    batches = [{k: batch[k] for k in wide.family.input_names}]
    model, family = narrow.model.eval(), narrow.family
    kept = [narrow_block(block, 16, gram(model, family.layers(model), block, batches))
            for block in family.feed_forwards(model)]
    with torch.no_grad():
        reference = wide.model.eval()(**batches[0], output_hidden_states=True).hidden_states[-1]
        refitted = model(**batches[0], output_hidden_states=True).hidden_states[-1]
        dropped = loading.load(str(checkpoints["bert"]["ner"])).model.eval()
        for block, keep in zip(family.feed_forwards(dropped), kept):  # the same units, without the refit
            block.up.weight.data, block.up.bias.data = block.up.weight.data[keep], block.up.bias.data[keep]
            block.down.weight.data = block.down.weight.data[:, keep]
        plain = dropped(**batches[0], output_hidden_states=True).hidden_states[-1]
    mask = batch["attention_mask"].bool()
    error = lambda x: ((x - reference)[mask] ** 2).mean().item()  # noqa: E731
    assert error(refitted) < 0.5 * error(plain)


def test_a_width_that_does_not_narrow_is_refused_before_any_output(tokenizer, tmp_path):
    source = build_checkpoint(tmp_path / "wide", "bert", tokenizer, labels=("negative", "positive"))
    options = NarrowOptions(width=64, texts=32, train_limit=8, data_dir=DATA)
    with pytest.raises(ConverterInputError, match="does not narrow"):
        narrow_checkpoint(str(source), "glue:sst2", tmp_path / "out", options, log=lambda *_: None)
    assert not (tmp_path / "out").exists()


def test_distillation_after_the_refit_is_recorded(tokenizer, tmp_path):
    source = build_checkpoint(tmp_path / "wide", "bert", tokenizer, labels=("negative", "positive"))
    options = NarrowOptions(width=32, texts=32, budget=parse_budget("3steps"), train_limit=64, data_dir=DATA)
    path, record = narrow_checkpoint(str(source), "glue:sst2", tmp_path / "n", options, log=lambda *_: None)
    report = record["narrow"]
    assert report["steps"] == 3 and report["teacher"] == "the input"
    assert set(report) >= {"dev_before", "dev_narrowed", "dev_after"}
    card = (path / "README.md").read_text()
    assert "## Narrower feed-forward blocks" in card and "keeps 32 of its 64 hidden units" in card
    assert "Then distilled for 3 steps" in card and "teacher the input" in card


# --- a task given as a file needs its dev file -------------------------------------------------------------

def _task_files(root, rows: list[str]):
    """A GLUE-format training file and a dev file of its own (fewer rows, so a record tells which was scored)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, count in (("train.tsv", len(rows)), ("dev.tsv", 6)):  # labels 0-2: the tiny heads have three
        (root / name).write_text("sentence\tlabel\n" + "".join(f"{t}\t{i % 3}\n" for i, t in enumerate(rows[:count])),
                                 encoding="utf-8")
    return root / "train.tsv", root / "dev.tsv"


ROWS = [f"review {i}: a {'fine' if i % 2 else 'dull'} film" for i in range(24)]
LEVER_ARGS = {"narrow": ["--ffn-width", "16", "--texts", "32"], "shrink": ["--layers", "1"],
              "factor-embeddings": ["--rank", "8"], "int4-tune": [], "trim-vocab": ["--size", "500"],
              "share-embeddings": ["--base", "{ckpt}"]}


@pytest.mark.parametrize("command", list(LEVER_ARGS))
def test_a_lever_on_a_training_file_without_dev_is_refused(command, checkpoints, tmp_path, capsys):
    from pocketbert.converter import cli
    from pocketbert.converter.errors import EXIT_INPUT

    ckpt = str(checkpoints["bert"]["classification"])
    train, _ = _task_files(tmp_path / "data", ROWS)
    out = tmp_path / "out"
    args = [a.format(ckpt=ckpt) for a in LEVER_ARGS[command]]
    code = cli.main([command, ckpt, "--task", str(train), *args, "--out", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_INPUT and "--dev" in err and "fix:" in err and "Traceback" not in err, err
    assert not out.exists()
    code = cli.main([command, ckpt, "--task", str(train), "--dev", str(train), *args, "--out", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_INPUT and "is the training file" in err and not out.exists(), err


def test_narrow_scores_the_dev_file_given(checkpoints, tmp_path, capsys):
    from pocketbert.converter import cli

    train, dev = _task_files(tmp_path / "data", ROWS)
    out = tmp_path / "narrow"
    code = cli.main(["narrow", str(checkpoints["bert"]["classification"]), "--task", str(train), "--dev", str(dev),
                     "--ffn-width", "16", "--texts", "32", "--max-accuracy-drop", "100", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    record = json.loads((out / "training.json").read_text(encoding="utf-8"))
    assert (record["train_examples"], record["dev_examples"]) == (24, 6)  # scored on the dev file, not the training one
