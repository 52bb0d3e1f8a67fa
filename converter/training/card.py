"""Model cards (README.md with Hugging Face front matter) for the checkpoints training writes."""

from __future__ import annotations

DATA_NOTES = {
    "glue:sst2": ("SST-2 (GLUE)", "Stanford Sentiment Treebank, movie-review phrases; GLUE distribution"),
    "glue:mrpc": ("MRPC (GLUE)", "Microsoft Research Paraphrase Corpus; GLUE distribution"),
    "glue:cola": ("CoLA (GLUE)", "Corpus of Linguistic Acceptability; GLUE distribution"),
    "glue:stsb": ("STS-B (GLUE)", "STS Benchmark; see its LICENSE.txt in the GLUE data"),
    "conll2003": ("CoNLL-2003 English", "Reuters news; the CoNLL-2003 text is for research use only. "
                                        "The model weights are ours (Apache-2.0)"),
}


def model_card(record: dict) -> str:
    task = record["task"]
    data_name, data_note = DATA_NOTES.get(task, (task, f"from {record.get('train_file')}"))
    dev = record["dev_scores"]
    dev = dev.get("recovered", dev)  # a recovery record holds teacher / without / recovered scores
    scores = ", ".join(f"{k} {v:.2f}" for k, v in dev.items())
    recipe = record["recipe"]
    lines = [
        "---",
        "license: apache-2.0",
        "library_name: transformers",
        f"tags: [pocketbert, {record['kind']}]",
        "---",
        "",
        f"# {task}: {record['kind']} of {record.get('base_checkpoint', record.get('teacher'))}",
        "",
        "Written by PocketBERT (`python -m converter " + record["kind"] + " …`).",
        "",
        f"- **Data**: {data_name}: {record['train_examples']} training examples; {data_note}.",
        f"- **Dev scores** ({record['dev_examples']} examples): {scores}.",
        "- **Recipe**: " + ", ".join(f"{k} {v}" for k, v in recipe.items()) + ".",
        f"- **Training**: {record['training']['steps']} steps, {record['training']['seconds']:.0f} s "
        f"(stopped by {record['training']['stopped_by']}).",
    ]
    if record.get("transforms"):
        lines += ["", "## Structure",
                  f"Trained with `{','.join(record['transforms'])}`: config.json's `pocketbert` key records it and "
                  "PocketBERT's loader (`converter.loading.load`) rebuilds NoNorm/ReLU from it. Plain "
                  "`transformers.AutoModel` would rebuild LayerNorm/GELU and compute something else."]
    if record.get("comparison"):
        lines += ["", "## Scores against the teacher", "", "| model | " + " | ".join(record["comparison"]["metrics"])
                  + " |", "|---|" + "---|" * len(record["comparison"]["metrics"])]
        for row in record["comparison"]["rows"]:
            lines.append(f"| {row['name']} | " + " | ".join(f"{row['scores'][m]:.2f}" for m in
                                                           record["comparison"]["metrics"]) + " |")
    lines += ["", "## License", "", "Apache-2.0, as the base model all-MiniLM-L6-v2 (when that is the base). "
              "Training data licenses are the datasets' own (see above).", ""]
    return "\n".join(lines)
