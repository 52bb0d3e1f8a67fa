"""Teacher/student pairing: compatibility checks, layer mapping, and the forward passes that feed the losses."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from ...errors import ConverterInputError
from ...families import Family
from . import losses


@dataclass
class Pair:
    """A teacher (the untransformed model) and a student (a transformed copy) of one family.

    ``layer_map[m]`` is the teacher ``hidden_states`` index that student index ``m`` learns from
    (0 = embedding output, m ≥ 1 = output of block m; block m's attentions likewise map to teacher
    block ``layer_map[m]``).  With equal depths it is the identity; a student with M < N blocks maps
    uniformly, ``m → m·N // M`` (TinyBERT), so the last block learns from the teacher's last.
    """

    teacher: PreTrainedModel
    student: PreTrainedModel
    family: Family
    layer_map: list[int]

    @property
    def student_layers(self) -> int:
        return len(self.layer_map) - 1

    def inputs(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """The model inputs of a batch (labels and anything else left out)."""
        return {name: batch[name] for name in self.family.input_names if name in batch}


def pair(teacher: PreTrainedModel, student: PreTrainedModel, family: Family, *, attention: bool = True) -> Pair:
    """Check that ``student`` can learn from ``teacher`` layer by layer; raise ConverterInputError if not.

    Same family (``model_type``), same hidden width (feature maps are compared directly, without
    TinyBERT's learned projection), the same number of heads when attention transfer is used, the
    same number of outputs, and no more blocks in the student than in the teacher.
    """
    t_type, s_type = teacher.config.model_type, student.config.model_type
    if t_type != s_type or t_type not in family.model_types:
        raise ConverterInputError(f"teacher ({t_type}) and student ({s_type}) must both be of the {family.name} family "
                                  f"({', '.join(family.model_types)})",
                                  "distil a student made from the teacher itself (a copy with --opt nonorm,relu "
                                  "applied)")
    t_width, s_width = family.hidden_size(teacher.config), family.hidden_size(student.config)
    if t_width != s_width:
        raise ConverterInputError(f"teacher hidden size {t_width} differs from student hidden size {s_width}: "
                                  "feature-map transfer compares hidden states directly",
                                  "use a student of the teacher's width (a transformed copy of the teacher)")
    t_layers, s_layers = family.num_layers(teacher.config), family.num_layers(student.config)
    if s_layers > t_layers:
        raise ConverterInputError(f"the student has more layers ({s_layers}) than the teacher ({t_layers})",
                                  "use a student with at most as many layers as the teacher")
    if attention and family.num_heads(teacher.config) != family.num_heads(student.config):
        raise ConverterInputError(f"teacher has {family.num_heads(teacher.config)} attention heads, student "
                                  f"{family.num_heads(student.config)}: attention transfer compares them head by head",
                                  "set the attention weight to 0, or use a student with the teacher's heads")
    if type(teacher).__name__ != type(student).__name__:
        raise ConverterInputError(f"teacher is a {type(teacher).__name__}, student a {type(student).__name__}: their "
                                  "outputs cannot be compared",
                                  "give the student the teacher's task head (a copy of the teacher)")
    if teacher.config.num_labels != student.config.num_labels:
        raise ConverterInputError(f"teacher has {teacher.config.num_labels} outputs, student "
                                  f"{student.config.num_labels}",
                                  "give the student the teacher's labels (a copy of the teacher with its head)")
    layer_map = [m * t_layers // s_layers for m in range(s_layers + 1)]
    return Pair(teacher, student, family, layer_map)


@contextmanager
def eager_attention(*models: PreTrainedModel) -> Iterator[None]:
    """Switch models to the eager attention implementation (the only one that returns attention
    probabilities: sdpa silently returns none) and restore each model's own afterwards."""
    saved = [(model, model.config._attn_implementation) for model in models]
    try:
        for model, current in saved:
            if current != "eager":
                model.set_attn_implementation("eager")
        yield
    finally:
        for model, previous in saved:
            if model.config._attn_implementation != previous:
                model.set_attn_implementation(previous)


@contextmanager
def no_dropout(model: nn.Module) -> Iterator[None]:
    """Set every dropout probability of ``model`` to 0 (restored after).

    Recovery trains the student to compute the teacher's function, and the teacher runs without
    dropout; worse, in train mode Hugging Face returns the attention probabilities *after* dropout
    (zeros and 1/(1−p)-scaled values), which makes the attention KL meaningless.  The eager
    attention reads its probability from the module's ``nn.Dropout.p``, so this covers it too.
    """
    saved = [(module, module.p) for module in model.modules() if isinstance(module, nn.Dropout)]
    try:
        for module, _ in saved:
            module.p = 0.0
        yield
    finally:
        for module, p in saved:
            module.p = p


@contextmanager
def truncated(model: PreTrainedModel, layers: nn.ModuleList, keep: int) -> Iterator[None]:
    """Run only the first ``keep`` blocks of ``model`` (``layers`` = its block list; the progressive
    stages need no deeper outputs): a forward inside this context returns ``keep + 1`` hidden states,
    and the blocks after ``keep`` cost nothing."""
    if keep >= len(layers):
        yield
        return
    _install_output_hooks(model)
    removed = list(layers[keep:])
    del layers[keep:]
    try:
        yield
    finally:
        layers.extend(removed)


def _install_output_hooks(model: PreTrainedModel) -> None:
    """Hugging Face installs the hooks that collect hidden states and attentions on the modules
    present at the first forward pass; one full pass before any truncated one hooks every block."""
    if getattr(model, "_distill_hooks_ready", False):
        return
    training = model.training
    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            model.eval()(input_ids=torch.zeros(1, 2, dtype=torch.long, device=device), output_hidden_states=True,
                         output_attentions=True)
    finally:
        model.train(training)
    model._distill_hooks_ready = True


def forward(model: PreTrainedModel, inputs: dict[str, Tensor], *, hidden: bool, attentions: bool):
    """One forward pass returning logits and, on request, hidden states and attention probabilities."""
    return model(**inputs, output_hidden_states=hidden, output_attentions=attentions, return_dict=True)


@torch.no_grad()
def measure_gap(pair_: Pair, batches, *, max_batches: int = 8, temperature: float = 1.0) -> dict[str, float]:
    """Student–teacher gap on up to ``max_batches`` batches, both models in eval mode.

    ``logit_mse``: mean squared logit difference; ``logit_kl``: the logit-distillation term at
    ``temperature``; ``agreement``: top-1 agreement (classification and NER, over real tokens; for
    regression the fraction within 0.1 of the teacher); ``last_hidden_mse``: feature-map gap of
    the last block; ``examples``: rows (tokens for NER) compared.
    """
    from .losses import hidden_mse, logit_distillation, masked_mean

    teacher, student = pair_.teacher, pair_.student
    modes = teacher.training, student.training
    teacher.eval(), student.eval()
    sums = {"logit_mse": 0.0, "logit_kl": 0.0, "agreement": 0.0, "last_hidden_mse": 0.0}
    weight_total = 0.0
    try:
        for i, batch in enumerate(batches):
            if i >= max_batches:
                break
            inputs = pair_.inputs(batch)
            mask = inputs.get("attention_mask")
            t = forward(teacher, inputs, hidden=True, attentions=False)
            s = forward(student, inputs, hidden=True, attentions=False)
            token_level = s.logits.dim() == 3
            weight = float(mask.sum()) if token_level and mask is not None else float(s.logits.shape[0])
            m = mask if token_level else None
            if s.logits.shape[-1] == 1:
                agree = ((s.logits - t.logits).abs() <= 0.1).squeeze(-1).float()
            else:
                agree = (s.logits.argmax(-1) == t.logits.argmax(-1)).float()
            values = {
                "logit_mse": masked_mean((s.logits - t.logits).pow(2).mean(-1), m),
                "logit_kl": logit_distillation(s.logits, t.logits, temperature=temperature, attention_mask=mask),
                "agreement": masked_mean(agree, m),
                "last_hidden_mse": hidden_mse(s.hidden_states[-1], t.hidden_states[pair_.layer_map[-1]], mask),
            }
            for key, value in values.items():
                sums[key] += float(value) * weight
            weight_total += weight
    finally:
        teacher.train(modes[0]), student.train(modes[1])
    if not weight_total:
        raise ConverterInputError("no batches to measure the student-teacher gap on",
                                  "give at least one batch of examples")
    return {**{k: v / weight_total for k, v in sums.items()}, "examples": int(weight_total)}


def every_token_distillation(teacher: nn.Module, student: nn.Module, input_names) -> Callable:
    """The loss of a student with its teacher's depth and pieces (re-tuned word-embedding factors, int4 tuning):
    logit KL (T=1) plus the mean over every layer of the hidden-state MSE at every real token; the teacher runs
    without gradients, on the student's ids (:func:`..teacher.frozen_teacher` renumbers a trimmed student's teacher).
    ``loss_fn(batch) -> (loss, {"logits", "hidden"})``, as the training loop takes it."""

    def loss_fn(batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        inputs, mask = {k: batch[k] for k in input_names}, batch["attention_mask"]
        with torch.no_grad():
            target = teacher(**inputs, output_hidden_states=True)
        out = student(**inputs, output_hidden_states=True)
        logits = losses.logit_distillation(out.logits, target.logits, attention_mask=mask)
        hidden = sum(losses.hidden_mse(s, t, mask) for s, t in zip(out.hidden_states, target.hidden_states))
        hidden = hidden / len(out.hidden_states)
        return logits + hidden, {"logits": logits.item(), "hidden": hidden.item()}

    return loss_fn
