"""What the converter needs to know about one architecture family.

A family is one small module in this package that subclasses :class:`Family` and registers an
instance with :func:`converter.families.register`.  Everything architecture-specific lives there:
where the feed-forward activations sit, which normalisations fold exactly, and a tiny config that
the test-suite uses to test every registered family for free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from pocketbert.runtime.contract import INPUT_NAMES


@dataclass
class FoldSite:
    """A normalisation whose input is a plain sum of Linear outputs and/or embedding lookups.

    ``norm(x) = γ⊙x + β`` with ``x = Σ summand_i(·)`` can be pushed into the summands exactly:
    every summand is scaled by γ and β is added once, through ``bias_into``.
    A norm whose input includes a residual (another layer's output) is *not* a fold site.
    """

    path: str  # dotted module path of the norm, for reports
    parent: nn.Module  # module holding the norm as attribute ``attr``
    attr: str
    summands: list[nn.Module]  # nn.Linear or nn.Embedding modules whose outputs are summed
    bias_into: nn.Module  # one of the summands: receives β

    @property
    def norm(self) -> nn.Module:
        return getattr(self.parent, self.attr)


@dataclass
class ActivationSite:
    """An attribute holding the feed-forward activation function of one block."""

    path: str
    parent: nn.Module
    attr: str

    @property
    def activation(self) -> nn.Module:
        return getattr(self.parent, self.attr)


@dataclass
class FeedForward:
    """One feed-forward block: ``down(activation(up(x)))``; its width is ``up.out_features``."""

    path: str  # dotted module path of the block, for reports
    block: int  # index of the transformer block holding it
    up: nn.Linear
    down: nn.Linear
    activation: nn.Module | None = None  # between them (None: not known to the family)


@dataclass
class ScalePair:
    """A Linear (``reader``) whose input is another's output (``producer``'s) through operations that commute with a
    positive per-channel scale: attention's weighted sum of its values, or ReLU.  Dividing the producer's rows and bias
    by ``s`` and multiplying the reader's input columns by ``s`` leaves the function unchanged, with nothing added at
    run time: activation smoothing folded into the graph (``transforms.smoothquant``)."""

    path: str  # dotted module path of the reader, for reports
    producer: nn.Linear
    reader: nn.Linear


@dataclass
class ResidualStream:
    """One tensor of a post-norm encoder's residual stream: the output of ``producer``, a normalisation.

    It is read by ``readers`` (Linears taking it as input), and carried by the residual add
    ``stream + writer(…)`` into ``next_norm``. The last stream has no writer and is read by the task head.
    ``producer`` is the embedding norm for the first stream; when fold has made that the identity, the
    embedding block's ``summands`` (its tables) produce the stream instead.
    """

    path: str  # dotted module path of the producing norm, for reports
    producer: nn.Module
    readers: list[nn.Linear]
    writer: nn.Linear | None = None
    next_norm: nn.Module | None = None
    summands: list[nn.Module] = field(default_factory=list)


class Family:
    """Base class of an architecture family; subclasses fill in the architecture-specific parts."""

    #: registry key, as written in the manifest
    name: str = ""
    #: ``model_type`` values of config.json handled by this family
    model_types: tuple[str, ...] = ()
    #: human description for error messages and --help
    description: str = ""
    #: whether the exported graph takes ``token_type_ids``
    uses_token_type_ids: bool = True
    #: the config field holding the feed-forward width (``narrow`` rewrites it)
    ffn_width_key: str = "intermediate_size"

    @property
    def input_names(self) -> tuple[str, ...]:
        """The model's inputs, in graph order: what every backend exports and the training code feeds."""
        return INPUT_NAMES if self.uses_token_type_ids else INPUT_NAMES[:2]

    # --- structure -------------------------------------------------------------------------
    def base(self, model: PreTrainedModel) -> nn.Module:
        """The encoder (embeddings + transformer blocks) without the task head."""
        return model.base_model

    def norms(self, model: PreTrainedModel) -> list[tuple[str, nn.Module]]:
        """Every normalisation module in the encoder (LayerNorm or NoNorm), with its path."""
        return [
            (path, module)
            for path, module in self.base(model).named_modules()
            if isinstance(module, nn.LayerNorm) or is_nonorm(module)
        ]

    def embeddings(self, model: PreTrainedModel) -> nn.Module:
        """The embedding block (its output is ``hidden_states[0]`` of Hugging Face models)."""
        return self.base(model).embeddings

    def layers(self, model: PreTrainedModel) -> nn.ModuleList:
        """The transformer blocks in forward order (``hidden_states[i + 1]`` is block i's output)."""
        raise NotImplementedError

    def activation_sites(self, model: PreTrainedModel) -> list[ActivationSite]:
        """The activation of every feed-forward block."""
        raise NotImplementedError

    def feed_forwards(self, model: PreTrainedModel) -> list[FeedForward]:
        """Every feed-forward block in forward order (all of one width, the config's ``ffn_width_key``)."""
        raise NotImplementedError

    def fold_sites(self, model: PreTrainedModel) -> list[FoldSite]:
        """Normalisations whose input is a pure sum of Linear/embedding outputs (see FoldSite)."""
        raise NotImplementedError

    def value_pairs(self, model: PreTrainedModel) -> list[ScalePair]:
        """Each attention block's value Linear and the Linear reading the heads' weighted sum of its values (see
        ScalePair); a family without them folds only its ReLU feed-forward blocks' scales."""
        return []

    def scale_pairs(self, model: PreTrainedModel) -> list[ScalePair]:
        """Every Linear whose input scales fold into the Linear producing it (see ScalePair): the attention
        outputs', and the feed-forward outputs' where the activation is ReLU (GELU does not commute with a scale)."""
        feed_forwards = [ScalePair(f"{ff.path} (feed-forward output)", ff.up, ff.down)
                         for ff in self.feed_forwards(model) if is_relu(ff.activation)]
        return self.value_pairs(model) + feed_forwards

    def residual_streams(self, model: PreTrainedModel) -> list[ResidualStream]:
        """The residual stream in forward order, embedding output first (see ResidualStream); the
        per-channel equalisation before static int8 needs it. A family without it is never equalised."""
        raise NotImplementedError

    # --- shapes ----------------------------------------------------------------------------
    def num_heads(self, config: PretrainedConfig) -> int:
        return config.num_attention_heads

    def hidden_size(self, config: PretrainedConfig) -> int:
        return config.hidden_size

    def num_layers(self, config: PretrainedConfig) -> int:
        return config.num_hidden_layers

    def max_positions(self, config: PretrainedConfig) -> int:
        return config.max_position_embeddings

    # --- tests -----------------------------------------------------------------------------
    def tiny_config(self, vocab_size: int) -> PretrainedConfig:
        """A small config of this family for tests (random weights, fixed seed)."""
        raise NotImplementedError


def is_relu(module: nn.Module | None) -> bool:
    """True for torch's ReLU and transformers' ReLU activations (positively homogeneous: relu(s·z) = s·relu(z))."""
    return isinstance(module, nn.ReLU) or type(module).__name__ in {"ReLU", "ReLUActivation"}


def is_nonorm(module: nn.Module) -> bool:
    """True for any element-wise ``x*γ+β`` module: ours or transformers' MobileBERT NoNorm."""
    return type(module).__name__ == "NoNorm" and hasattr(module, "weight") and hasattr(module, "bias")
