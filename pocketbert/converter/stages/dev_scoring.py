"""The task's labelled dev split, read once per conversion for the stages that score on it: the quantize stage's int8
ladders hold a plain file that missed its calibration-text target to the dev gate itself, and the verify stage holds
every int8 file to it (``checks.dev_gate``), each file scored once (``dev_gate.DevScores``)."""

from __future__ import annotations

from ..checkpoints.training_record import training_record
from ..checks import dev_gate
from ..conversion import Conversion


def dev_scores(conversion: Conversion) -> dev_gate.DevScores | None:
    """The dev split the checkpoint's task names, encoded as the gates encode it; None when the task or its dev file
    is not known here (the load stage looked for it: ``Inputs.dev_file``), the split holds no labels the model has,
    or ``--no-dev-gate`` asked for no scoring (said in the notes: the gates then score the bundle themselves)."""
    load = conversion.load
    inputs, loaded = load.inputs, load.loaded
    if inputs.dev_file is None:
        return None
    if not conversion.options.dev_gate:
        dev = f"{inputs.dev_file.parent.name}/{inputs.dev_file.name}"
        conversion.note(f"no file was scored on {dev} (--no-dev-gate): the quantised files were held to "
                        "verification's bars alone; pocketbert-bench gates scores them", keep=True)
        return None
    record = training_record(loaded.checkpoint) or {}
    split = dev_gate.dev_split(str(record.get("task") or ""), inputs.dev_file, data=inputs.data_dir,
                               tokenizer=loaded.tokenizer, labels=loaded.labels, length=load.verify_length)
    return None if split is None else dev_gate.DevScores(split, list(load.encoder.input_names))
