"""The conversion-time profile: a real conversion's stages and steps, its ladders' judgements, the table."""

from __future__ import annotations

from pocketbert.benchmarks import conversion_time


def test_the_profile_accounts_for_every_stage_and_step(checkpoints, options, tmp_path):
    ckpt = checkpoints["bert"]["classification"]
    figures = conversion_time.measure(options(ckpt, opts="int8", formats="onnx,tflite", buckets=[32],
                                              out=tmp_path / "bundle"), profile_rows=5)
    stages = figures["stages"]
    assert {"load", "export", "quantize", "metadata", "verify", "bundle"} <= set(stages)
    # each stage's time is the sum of its steps (rounding aside), and the stages add up to nearly the total
    for stage, seconds in stages.items():
        steps = [s["seconds"] for s in figures["steps"] if s["stage"] == stage]
        assert abs(sum(steps) - seconds) <= 0.1 * len(steps) + 0.05, stage
    assert sum(stages.values()) <= figures["total_s"] + 0.5
    names = [s["step"] for s in figures["steps"]]
    assert "Quantising onnx:int8-dynamic" in names and "Verifying tflite:int8-dynamic" in names
    assert "Embedding metadata in tflite:int8-dynamic" in names
    ladder = figures["ladders"]["onnx:int8-dynamic"]
    assert ladder["judged"] >= 1 and ladder["texts"] >= 64  # the calibration text, judged at least once
    profiled = [row["cumulative_s"] for row in figures["cprofile"]]
    assert len(profiled) == 5 and profiled == sorted(profiled, reverse=True)

    lines = conversion_time.table_lines("tiny", figures)
    assert any(line.strip().startswith("quantize") and "Quantising onnx:int8-dynamic" in line
               and "candidates judged" in line for line in lines)
    data = conversion_time.results_file("tiny", figures, "conversion-time tiny")
    assert data["command"] == "conversion-time" and data["machine"]["cpu"] and data["results"][0]["stages"] == stages


def test_the_command_reports_a_missing_checkpoint_as_problem_and_fix(tmp_path):
    from click.testing import CliRunner

    from pocketbert.benchmarks.cli import cli

    out = tmp_path / "timing.json"
    result = CliRunner().invoke(cli, ["conversion-time", str(tmp_path / "nowhere"), "--out", str(out)])
    assert result.exit_code == 3 and "Traceback" not in result.output
    assert "error:" in result.output and "fix:" in result.output and not out.exists()


def test_a_refused_conversion_keeps_its_figures(checkpoints, options, tmp_path):
    """A conversion the verification refuses (here: an int8 bar no file can meet) wrote no bundle, but the time
    it took is still what the profile measures: the figures and the table say so."""
    figures = conversion_time.measure(options(checkpoints["bert"]["classification"], recipes="onnx:int8-dynamic",
                                              int8_min_cosine=1.5, out=tmp_path / "bundle"))
    assert figures["refused"] and "cosine" in figures["refused"] and not (tmp_path / "bundle").exists()
    assert {"quantize", "verify"} <= set(figures["stages"]) and figures["stages"]["quantize"] > 0
    assert "refused, no bundle" in conversion_time.table_lines("tiny", figures)[0]
