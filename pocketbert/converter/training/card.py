"""Model cards (README.md with Hugging Face front matter) for the checkpoints training writes."""

from __future__ import annotations

from ..checkpoints.training_record import shipped_scores

DATA_NOTES = {
    "glue:sst2": ("SST-2 (GLUE)", "Stanford Sentiment Treebank, movie-review phrases; GLUE distribution"),
    "glue:mrpc": ("MRPC (GLUE)", "Microsoft Research Paraphrase Corpus; GLUE distribution"),
    "glue:cola": ("CoLA (GLUE)", "Corpus of Linguistic Acceptability; GLUE distribution"),
    "glue:stsb": ("STS-B (GLUE)", "STS Benchmark; see its LICENSE.txt in the GLUE data"),
    "conll2003": ("CoNLL-2003 English", "Reuters news; the CoNLL-2003 text is for research use only. "
                                        "The model weights are ours (Apache-2.0)"),
}


def model_card(record: dict) -> str:
    dev = shipped_scores(record)
    scores = ", ".join(f"{k} {v:.2f}" for k, v in dev.items())
    lines = _summary(record, scores) + _shipped_check(record)
    if record.get("vocab_trim"):
        lines += _trimmed(record["vocab_trim"], scores)
    if record.get("factored_embeddings"):  # replaces the input's shipped form (its table is no longer whole)
        lines += _factored(record["factored_embeddings"], scores)
    elif record.get("base_embeddings"):
        lines += _shared_embeddings(record["base_embeddings"], scores)
    if record.get("narrow"):
        lines += _narrow(record["narrow"])
    if record.get("int4_grid"):
        lines += _int4(record["int4_grid"])
    if record.get("transforms"):
        lines += ["", "## Structure",
                  f"Trained with `{','.join(record['transforms'])}`: config.json's `pocketbert` key records it and "
                  "PocketBERT's loader (`converter.checkpoints.loading.load`) rebuilds NoNorm/ReLU from it. Plain "
                  "`transformers.AutoModel` would rebuild LayerNorm/GELU and compute something else."]
    if (record.get("distillation") or {}).get("qat"):
        lines += _qat(record["distillation"])
    if record.get("comparison"):
        lines += _comparison(record["comparison"])
    lines += ["", "## License", "", "Apache-2.0, as the base model all-MiniLM-L6-v2 (when that is the base). "
              "Training data licenses are the datasets' own (see above).", ""]
    return "\n".join(lines)


def _shipped_check(record: dict) -> list[str]:
    """A recovery: which dev check's state this is, and how noisy its dev score is."""
    best, noise, metric = record.get("best"), record.get("dev_noise"), record.get("metric")
    if not best or not metric:
        return []
    lines = [f"- **Shipped state**: the best of {best['checks']} dev checks, at step {best['steps']} "
             f"({best['fraction']:.0%} of the budget), dev {metric} {best[metric]:.2f} (the last step's: "
             f"{record['end_of_training'][metric]:.2f})."]
    if noise:
        lines.append(f"- **Dev noise**: {noise['dev_examples']} dev {noise['unit']}; {noise['level']:.0%} "
                     f"bootstrap interval ({noise['resamples']} resamples) of the difference to the teacher "
                     f"{noise['delta_interval'][0]:+.2f} to {noise['delta_interval'][1]:+.2f} points.")
    return lines


def _qat(distillation: dict) -> list[str]:
    """Quantization-aware recovery: the simulated export, the ranges, and the gap before and after it."""
    qat, after = distillation["qat"], distillation.get("gap_after") or {}
    before = qat.get("gap_post_training") or {}
    gap = lambda g: f"top-1 agreement {g['agreement']:.4f}, logit MSE {g['logit_mse']:.4g}" if g else "not measured"  # noqa: E731
    return ["", "## Quantization-aware recovery",
            f"Trained through a simulation of the full-integer export ({qat['scheme']}; "
            f"{qat['activation_ranges']} int8 activation tensors). Ranges: {qat['ranges']}.",
            f"Simulated int8 against the float teacher on dev: post-training quantization {gap(before)}; "
            f"after quantization-aware recovery {gap(after)}. See docs/full-integer.md."]


def _summary(record: dict, scores: str) -> list[str]:
    """Front matter, title, data, dev scores, recipe and training run."""
    task = record["task"]
    data_name, data_note = DATA_NOTES.get(task, (task, f"from {record.get('train_file')}"))
    recipe = record["recipe"]
    return [
        "---",
        "license: apache-2.0",
        "library_name: transformers",
        f"tags: [pocketbert, {record['kind']}]",
        "---",
        "",
        f"# {task}: {record['kind']} of {record.get('base_checkpoint', record.get('teacher'))}",
        "",
        "Written by PocketBERT (`pocketbert-convert " + record["kind"] + " …`).",
        "",
        f"- **Data**: {data_name}: {record['train_examples']} training examples; {data_note}.",
        f"- **Dev scores** ({record['dev_examples']} examples): {scores}.",
        "- **Recipe**: " + ", ".join(f"{k} {v}" for k, v in recipe.items()) + ".",
        f"- **Training**: {record['training']['steps']} steps, {record['training']['seconds']:.0f} s "
        f"(stopped by {record['training']['stopped_by']}).",
    ]


def _trimmed(trim: dict, scores: str) -> list[str]:
    """The vocabulary trim (``trim-vocab``) and its re-tuning."""
    retune = trim.get("retune")
    before = ", ".join(f"{k} {v:.2f}" for k, v in trim["dev_before"].items())
    lines = ["", "## Shipped form",
             f"Vocabulary trimmed from {trim['vocab_size_before']} to {trim['vocab_size_after']} word pieces "
             f"(special tokens, every single character, then the pieces {trim['texts']}'s training text uses "
             "most: `pocketbert-convert trim-vocab`)"
             + (", weights stored in float16" if trim.get("fp16") else "")
             + f". Dev before trimming: {before}; {trim['texts_tokenized_unchanged']:.1%} of dev texts "
             "tokenize exactly as before, the others split rare words into smaller pieces."]
    if retune:
        lines.append(f"Re-tuned after trimming by distillation from the untrimmed model on the training text "
                     f"({retune['loss']}; {retune['steps']} steps, {retune['seconds']:.0f} s, lr {retune['lr']}): "
                     "dev " + ", ".join(f"{k} {v:.2f}" for k, v in retune["dev_before"].items())
                     + " right after trimming, " + scores + " after re-tuning.")
    return lines


def _shared_embeddings(shared: dict, scores: str) -> list[str]:
    """The word-embedding table left out because a base model has it (``share-embeddings``)."""
    retune = shared["retune"]
    lines = ["", "## Shipped form",
             f"The word-embedding table ({shared['shape'][0]} × {shared['shape'][1]}) is not stored: it is "
             f"`{shared['model']}`'s, unchanged (sha256 `{shared['sha256'][:16]}…`), and PocketBERT's loader "
             "puts it back (`pocketbert-convert share-embeddings`)"
             + (". The other weights are stored in float16" if shared.get("fp16") else "") + "."]
    if retune:
        lines.append(f"The fine-tuned table had moved {shared['relative_change']:.1%} (relative norm) from the "
                     "base's; with the base's table put back, dev " + ", ".join(
                         f"{k} {v:.2f}" for k, v in shared["dev_with_base_table"].items())
                     + "; after re-tuning every other weight by distillation from the model with its own table "
                     f"({retune['loss']}; {retune['steps']} steps, {retune['seconds']:.0f} s, lr {retune['lr']}): "
                     + scores + ".")
    else:
        lines.append("The table was frozen through fine-tuning and recovery (`--freeze-word-embeddings`), so "
                     "no re-tuning was needed; dev as shipped: " + scores + ".")
    return lines


def _factored(factored: dict, scores: str) -> list[str]:
    """The factored word embeddings (``factor-embeddings``): trim, factoring, re-tuning and what is stored."""
    dev = lambda key: ", ".join(f"{k} {v:.2f}" for k, v in factored[key].items())  # noqa: E731
    trim, retune, body = factored.get("vocab_trim"), factored.get("retune"), factored.get("base_weights")
    lines = ["", "## Shipped form",
             (f"Vocabulary trimmed from {trim['vocab_size_before']} to {trim['vocab_size_after']} word pieces, then "
              if trim else "")
             + f"word embeddings factored into a {factored['rows']} × {factored['rank']} table and a projection "
             f"(`pocketbert-convert factor-embeddings`; row-weighted SVD, weighted relative error "
             f"{factored['weighted_relative_error']:.3f}). Dev {dev('dev_before')} before, {dev('dev_factored')} "
             "right after factoring" + (f", {dev('dev_after')} after re-tuning the two factors by distillation "
                                         f"({retune['loss']}; {retune['steps']} steps, {retune['seconds']:.0f} s, "
                                         f"lr {retune['lr']})" if retune else "") + "."]
    if body:
        lines.append(f"Only the word embeddings are stored: every other weight is `{body['model']}`'s, unchanged "
                     f"({body['tensors']} tensors, sha256 `{body['sha256'][:16]}…`), and PocketBERT's loader puts "
                     "them back" + (". The factors are stored in float16" if factored.get("fp16") else "") + ".")
    return lines


def _narrow(narrow: dict) -> list[str]:
    """``narrow``: narrower feed-forward blocks, their output projections refitted (and any distillation)."""
    dev = lambda key: ", ".join(f"{k} {v:.2f}" for k, v in narrow[key].items())  # noqa: E731
    run = (f" Then distilled for {narrow['steps']} steps ({narrow['seconds']:.0f} s, lr {narrow['lr']}, teacher "
           f"{narrow['teacher']}: {narrow['loss']}): dev {dev('dev_after')}." if narrow["steps"] else "")
    return ["", "## Narrower feed-forward blocks",
            f"Each of the {narrow['feed_forward_blocks']} feed-forward blocks keeps {narrow['width_after']} of its "
            f"{narrow['width_before']} hidden units, those contributing most to its output on {narrow['texts']} "
            "training texts, and its output projection was fitted again by least squares to what the wide block "
            f"computed (`pocketbert-convert narrow`). Dev {dev('dev_before')} before, {dev('dev_narrowed')} "
            f"after.{run}"]


def _int4(grid: dict) -> list[str]:
    """``int4-tune``: trained through int4 rounding and put on the grid (and how it is stored)."""
    dev = lambda key: ", ".join(f"{k} {v:.2f}" for k, v in grid[key].items())  # noqa: E731
    tuned = grid.get("input") if not grid["steps"] else grid  # packed afterwards: the run that trained it
    run = (f"trained for {tuned['steps']} steps ({tuned['seconds']:.0f} s, lr {tuned['lr']}, teacher "
           f"{tuned['teacher']}: {tuned['loss']}), then " if tuned and tuned["steps"] else "")
    return ["", "## Weights on the int4 grid",
            f"Dev {dev('dev_float')} in float, {dev('dev_int4_before')} with its weights rounded to the int4 grid of "
            f"`tflite:int4-dynamic` (`pocketbert-convert int4-tune`); {run}{grid['tensors_on_grid']} weights "
            f"(every Linear and the word-embedding table) put on that grid: dev {dev('dev_after')}. The int4 TFLite "
            "file holds these weights exactly."
            + (" They are stored as int4, two to a byte with a float32 scale per row, every other weight in float16; "
               "PocketBERT's loader unpacks them." if grid.get("packed") else "")]


def _comparison(comparison: dict) -> list[str]:
    """A Markdown table: one row per compared model (the teacher and the students), one column per metric."""
    metrics = comparison["metrics"]
    lines = ["", "## Scores against the teacher", "", "| model | " + " | ".join(metrics) + " |",
             "|---|" + "---|" * len(metrics)]
    for row in comparison["rows"]:
        lines.append(f"| {row['name']} | " + " | ".join(f"{row['scores'][m]:.2f}" for m in metrics) + " |")
    return lines
