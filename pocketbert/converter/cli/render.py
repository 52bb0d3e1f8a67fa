"""The convert command's screen: the pipeline's events drawn as spinners, ticks, figures and warnings,
and the summary table.  Everything a user gave (paths, labels, tasks) is printed as text, never markup."""

from __future__ import annotations

from rich.table import Table

from pocketbert.runtime.contract import MANIFEST
from pocketbert.runtime.contract import sha256 as bundle_sha256
from pocketbert.runtime.terminal import plain, styled

from ..events import ArtifactBuilt, ArtifactVerified, Event, Note, StageFinished, StageStarted
from ..timing.speed_rule import MIN_SPEEDUP
from .common import console, log, out_console


class Screen:
    """A listener for :func:`pocketbert.converter.pipeline.convert`: one spinner per running step."""

    def __init__(self):
        self._status = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, StageStarted) and event.quiet:  # timing: no spinner's thread beside it
            console.print(plain(f"{event.description}…", "dim"))
        elif isinstance(event, StageStarted):
            self._status = console.status(plain(f"{event.description}…"))
            self._status.start()
        elif isinstance(event, StageFinished):
            self._stop()
            console.print(styled("[green]✓[/] ", event.description), plain(f"{event.seconds:.1f} s", "dim"))
        elif isinstance(event, Note):
            warn(event.message) if event.warning else log(event.message)
        elif isinstance(event, ArtifactBuilt):
            for line, warning in built_lines(event):
                warn(line) if warning else log(line)
        elif isinstance(event, ArtifactVerified):
            line = f"  {event.recipe}: {figures_line(event.verification)}"
            log(line) if event.verification["passed"] else warn(line)

    def _stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def close(self) -> None:
        """After an error: no spinner left turning under the message."""
        self._stop()


def warn(message: str) -> None:
    console.print(styled("[yellow]![/] ", message))


def built_lines(event: ArtifactBuilt) -> list[tuple[str, bool]]:
    """(line, is a warning) for what the quantiser chose or gave up for one artifact."""
    details, lines = event.details, []
    if "selection" in details:
        lines.append(("  " + selection_line(details["selection"]), False))
    equalization = details.get("equalization")
    if equalization:
        lines.append((f"  {event.recipe}: residual stream equalised before calibration: "
                      f"{equalization['channels_scaled']:,} channels of {equalization['streams']} stream tensors "
                      f"divided by up to {equalization['largest_scale']:g} (exact in float)", False))
    if (details.get("smoothing") or {}).get("folded"):
        lines.append((folded_line(event.recipe, details), False))
    choice = details.get("size_choice")
    if choice:
        tried = ", ".join(f"{t['recipe']} {t['bytes'] / 1e6:.1f} MB ({t['outcome']})" if t["bytes"] else
                          f"{t['recipe']} (weights alone over the budget)" for t in choice["candidates"])
        lines.append((f"  --max-size {choice['max_bytes'] / 1e6:g} MB: {tried}", False))
    fallback = details.get("float_fallback") or {}
    if fallback.get("roles"):
        kept_as = fallback.get("kept_as", "float")
        lines.append((f"{event.recipe}: {fallback[f'linears_in_{kept_as}']} of {fallback['linears']} Linear layers "
                      f"kept in {kept_as} for accuracy: {', '.join(fallback['roles'])}", True))
    if (details.get("ladder_dev_gate") or {}).get("passed") and not fallback.get("target_met", True):
        lines.append((held_the_dev_gate_line(event.recipe, details, event.int8_target), False))
    elif fallback.get("accepted") and not fallback.get("target_met", True):
        lines.append((short_of_target_line(event.recipe, fallback, event.int8_target), True))
    return lines


def folded_line(recipe: str, details: dict) -> str:
    """Why an int8 file ships smoothed with its scales folded in (``Quantizer._folded``): the plain file missed."""
    plain = details.get("unsmoothed_attempt")
    gate = (plain or {}).get("dev_gate")
    if gate and not gate["passed"]:
        missed = (f"the plain int8 file's dev {gate['metric']} {gate['score']:.2f} was more than "
                  f"{gate['allowed_below']:g} below its float file's {gate['float']:.2f}")
    else:  # no plain file: static int8 without the dev split, after the plain dynamic file missed the target
        missed = f"the plain {'' if plain else 'dynamic '}int8 file missed the target on the calibration text"
    return (f"  {recipe}: smoothed, {details['smoothing']['linears']} Linears' input scales folded into the Linears "
            f"producing those inputs (nothing added at run time: the plain file's graph and speed), since {missed}")


def held_the_dev_gate_line(recipe: str, details: dict, target: float) -> str:
    """Why an int8 file short of the calibration-text target ships: the dev gate, which the target stands in for, was
    asked directly (``quantize.dev_check``).  A plain file ships without the ladder's later rungs; a smoothed one
    holds the gate the plain file lost (``Quantizer.build``)."""
    fallback, gate = details["float_fallback"], details["ladder_dev_gate"]
    shipped = next((s for s in reversed(fallback["search"]) if s["float_roles"] == fallback["roles"]),
                   fallback["search"][0])
    found = min(shipped["top1_agreement"], shipped.get("entity_f1", 1.0))
    kind, after = "", ": shipped all in int8, no smoothing or Linears in float"
    if details.get("smoothing"):
        plain = (details.get("unsmoothed_attempt") or {}).get("dev_gate")
        lost = plain is not None and not plain["passed"]
        kind, after = "smoothed, ", (f"; the plain int8 file's {plain['score']:.2f} did not" if lost else "")
    return (f"  {recipe}: {kind}{found:.2%} agreement on the calibration text, short of the {target:.1%} target, but "
            f"dev {gate['metric']} {gate['score']:.2f} against its float file's {gate['float']:.2f} holds the dev gate "
            f"(at most {gate['allowed_below']:g} below){after}")


def short_of_target_line(recipe: str, fallback: dict, target: float) -> str:
    """Why an int8 file ships short of its accuracy target: no step reached it, or a step on the way did not run
    ``speed_rule.MIN_SPEEDUP`` times as fast as the fp32 file, so the cheapest step meeting the bar ships."""
    search = fallback["search"]
    measure = "top-1 agreement and entity F1" if "entity_f1" in search[0] else "top-1 agreement"
    aim = f"the int8 target ({measure} ≥ {target:.1%} on calibration text)"
    tried = (fallback.get("speed") or {}).get("tried") or []
    slow = tried[0] if len(tried) > 1 else next((s["too_slow"] for s in search if "too_slow" in s), None)
    if slow is not None:  # the step that met the target, or one on the way to it, did not pay; the last timed ships
        ships = tried[-1] if tried and tried[-1] is not slow else None
        shipped = (f", {ships['linears_in_float']} in float: {ships['latency_ms']:.1f} ms against "
                   f"{ships['fp32_latency_ms']:.1f} ms" if ships else "")
        return (f"{recipe}: keeping {slow['linears_in_float']} of {fallback['linears']} Linear layers in float for "
                f"{aim} ran at {slow['fp32_latency_ms'] / slow['latency_ms']:.2f}x fp32's speed "
                f"({slow['latency_ms']:.1f} ms against {slow['fp32_latency_ms']:.1f} ms), short of the "
                f"{MIN_SPEEDUP:g}x an int8 file must gain; shipping the cheapest step that meets the bar{shipped}")
    judged = [s for s in search if not s.get("screened")] or search  # a screen reads too few texts to quote
    best = max(min(s["top1_agreement"], s.get("entity_f1", 1.0)) for s in judged)
    return f"{recipe}: {aim} was not reached (best {best:.1%}); shipping the cheapest attempt that meets the bar"


def selection_line(selection: dict) -> str:
    parts = []
    for c in selection["candidates"]:
        ms = c["latency_ms"] if c["latency_ms"] is not None else c["plain_latency_ms"]
        parts.append(f"{c['recipe']} {ms:.1f} ms ({c['outcome']})")  # the chosen one's outcome says "chosen"
    return "int8 auto: " + "; ".join(parts)


def figures_line(figures: dict) -> str:
    real = figures["real_sentences"]
    line = (f"real sentences: cosine {real['cosine']:.4f}, top-1 agreement {real['top1_agreement']:.1%}, "
            f"max |Δ| {real['max_abs']:.2g}")
    if "entity_f1" in real:
        line += f", entity F1 {real['entity_f1']:.1%} of {real['entities']} entities"
    if "fixed_inputs" in figures:
        line = f"fixed inputs max |Δ| {figures['fixed_inputs']['max_abs']:.2g}; " + line
    return line + ("" if figures["passed"] else f"  FAILED: {figures['failure']}")


def size_line(recipe: str, size: int, details: dict) -> str | None:
    """Why a quantised file is the size it is: its weights by type, and the Linears kept in float."""
    weights = details.get("weight_bytes")
    if not weights:
        return None
    shown = sorted(((n, t) for t, n in weights.items() if n >= 0.01 * size), reverse=True)
    line = f"{recipe} {size / 1e6:.1f} MB: weights " + ", ".join(f"{n / 1e6:.1f} MB {t}" for n, t in shown)
    fallback = details.get("float_fallback") or {}
    kept_as = fallback.get("kept_as", "float")
    if fallback.get(f"linears_in_{kept_as}"):
        cost = "4 bytes per weight where int8 takes 1" if kept_as == "float" else "1 byte per weight where int4 takes ½"
        line += (f"; {fallback[f'linears_in_{kept_as}']} of {fallback['linears']} Linear layers kept in {kept_as} for "
                 f"accuracy ({', '.join(fallback['roles'])}), {cost}")
    return line


def time_line(stage_seconds: dict[str, float], steps: list[tuple[str, str, float]]) -> str:
    """Where the conversion's time went: the stages, longest first, with their share, and a stage's longest step
    when the stage has several and that one took most of it."""
    total = sum(stage_seconds.values()) or 1.0
    parts = []
    for stage, seconds in sorted(stage_seconds.items(), key=lambda kv: -kv[1]):
        mine = [(step, s) for st, step, s in steps if st == stage]
        longest = max(mine, key=lambda x: x[1], default=None)
        detail = f"; {longest[0]} {longest[1]:.1f} s" if len(mine) > 1 and longest[1] >= seconds / 2 else ""
        parts.append(f"{stage} {seconds:.1f} s ({seconds / total:.0%}{detail})")
    return f"Where the time went ({total:.1f} s): " + ", ".join(parts)


def summary(result) -> None:
    manifest = result.manifest
    table = Table(title=plain(f"Bundle {result.bundle}"), title_justify="left")
    sequence = next((a["latency_ms"]["sequence"] for a in manifest["artifacts"] if a["latency_ms"]), None)
    latency_column = f"latency b1×s{sequence}" if sequence else "latency"
    for column in ("recipe", "file", "size", "parity vs PyTorch", latency_column, "speed-up vs fp32", "seconds"):
        table.add_column(column, justify="left" if column in ("recipe", "file", "parity vs PyTorch") else "right")
    # each artifact against the fp32 export of its own backend, as a speed-up (2.00× = twice as fast), never a time
    # ratio, which reads as "slower" for a faster file
    base = {a.recipe.split(":")[0]: a.latency_ms for a in result.artifacts if a.recipe.endswith(":fp32")}
    for a in result.artifacts:
        v = a.verification
        real = v["real_sentences"]
        if "fixed_inputs" in v:
            parity = f"max|Δ| {max(v['fixed_inputs']['max_abs'], real['max_abs']):.1e}"
        else:
            parity = f"cos {real['cosine']:.4f}, top-1 {real['top1_agreement']:.1%}"
            if "entity_f1" in real:
                parity += f", entities {real['entity_f1']:.1%}"
        latency = f"{a.latency_ms:.1f} ms" if a.latency_ms is not None else "-"
        own = base.get(a.recipe.split(":")[0])
        ratio = f"{own / a.latency_ms:.2f}×" if a.latency_ms and own else "-"
        table.add_row(a.recipe, a.file, f"{a.bytes / 1e6:.1f} MB", parity, latency, ratio, f"{a.seconds:.1f}")
    out_console.print(table)
    for a in result.artifacts:
        line = size_line(a.recipe, a.bytes, a.details)
        if line:
            out_console.print(plain(line))
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in result.stage_seconds.items())
    verification = manifest["verification"]
    unit = "sentence pairs" if verification.get("sentence_pairs") else "sentences"
    out_console.print(plain(f"Verified on {verification['samples']} {unit} from {verification['texts']}; "
                            f"stages: {stages}"))
    out_console.print(plain(time_line(result.stage_seconds, result.steps)))
    if manifest["source"]["head_initialized"]:
        out_console.print("[yellow]Note:[/] the task head is freshly initialised (untrained): outputs are "
                          "verified to match PyTorch, but predictions are not meaningful until the head is trained.")
    # manifest.json lists every file's SHA-256, so its own SHA-256 pins the whole bundle
    out_console.print(f"bundle pin: sha256 {bundle_sha256(result.bundle / MANIFEST)} "
                      "(runtime.load(dir, expected_sha256=...) or pocketbert-run DIR --expect-sha256 ...)",
                      markup=False, highlight=False)

