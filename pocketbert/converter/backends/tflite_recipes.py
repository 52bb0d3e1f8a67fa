"""The ai-edge-quantizer recipe behind each TFLite precision, and the call that applies it to a file.

* fp16: float casting of the Linear and embedding weights;
* int8-dynamic, int8-static: the quantizer's own recipes (static with int8 embedding rows added);
* int4-dynamic: int4 per-channel Linear weights with OCTAV clipping, int4 embedding rows with min-max.

The accuracy ladder (:func:`.base.float_fallback_search`) names Linear scopes to keep at a higher
precision: float for int8, int8 for int4.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from ..quiet import root_handlers_kept
from .tflite_compact import quantised_tensors
from .tflite_graph import model_bytes

#: our precision -> the ai-edge-quantizer recipe it starts from
QUANTIZER_RECIPES = {"fp16": "weight_only_wf16 (float casting)", "int8-dynamic": "dynamic_wi8_afp32",
                     "int8-static": "static_wi8_ai8", "int4-dynamic": "dynamic_wi4_afp32"}
#: how an int4 Linear's scale is chosen: OCTAV's clipping (the scale minimising each channel's squared
#: error) first; min-max when OCTAV makes a zero scale (it does for an all-zero channel)
INT4_CLIPPING = ("octav", "min-max")


def quiet():
    """litert-torch and the quantizer narrate every pass on stdout/stderr: keep the terminal ours."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    stack.enter_context(root_handlers_kept())
    return stack


def recipe_for(precision: str, float_scopes: list[str], float_ops: list[tuple[str, str]] = (),
               clipping: str = "min-max"):
    """The ai-edge-quantizer recipe for ``precision``, with the Linears of ``float_scopes`` kept at a higher
    precision (float; int8 for int4) and the ``(operation name, scope)`` pairs of ``float_ops`` in float."""
    from ai_edge_quantizer import qtyping, recipe
    from ai_edge_quantizer.recipe_manager import RecipeManager

    operation = qtyping.TFLOperationName
    manager = RecipeManager()
    if precision == "fp16":
        # fp16 weights, dequantised to float at load: half the size, float arithmetic
        for op in (operation.FULLY_CONNECTED, operation.EMBEDDING_LOOKUP):
            manager.add_weight_only_config(regex=".*", operation_name=op, num_bits=16,
                                           algorithm_key=recipe.AlgorithmName.FLOAT_CASTING)
    else:
        algorithm = {"algorithm_key": recipe.AlgorithmName.OCTAV} if clipping == "octav" else {}
        manager.load_quantization_recipe(getattr(recipe, QUANTIZER_RECIPES[precision])(**algorithm))
        if precision in ("int8-static", "int4-dynamic"):
            # embedding tables are half a small BERT's bytes: int8 rows for static int8 (which leaves them in
            # float), int4 for int4; min-max, whose scale floor keeps an all-zero (padding) row valid
            manager.add_weight_only_config(regex=".*", operation_name=operation.EMBEDDING_LOOKUP,
                                           num_bits=4 if precision == "int4-dynamic" else 8)
    if float_scopes:
        scopes = _exactly(float_scopes)
        if precision == "int4-dynamic":
            manager.add_dynamic_config(regex=scopes, operation_name=operation.FULLY_CONNECTED, num_bits=8)
        else:  # the latest matching entry wins: these ops stay float
            manager.add_quantization_config(regex=scopes, operation_name=operation.FULLY_CONNECTED,
                                            algorithm_key=recipe.AlgorithmName.NO_QUANTIZE)
    # one entry per operation, its scopes alternated: the quantizer tries every entry's pattern on every op, and
    # one entry per op (24-layer MobileBERT shape, four signatures: hundreds) cost a minute per quantisation
    by_operation: dict[str, list[str]] = {}
    for name, scope in float_ops:
        by_operation.setdefault(name, []).append(scope)
    for name, scopes in by_operation.items():
        manager.add_quantization_config(regex=_exactly(scopes), operation_name=name,
                                        algorithm_key=recipe.AlgorithmName.NO_QUANTIZE)
    return manager.get_quantization_recipe()


def quantize_file(float_path: Path, dest: Path, precision: str, float_scopes: list[str], calibrated=None,
                  float_ops: list[tuple[str, str]] = (), on_grid: bool = False) -> str:
    """Quantise ``float_path`` into ``dest``; returns the clipping used ("min-max" or, for int4, "octav").

    int4 tries OCTAV first: on the SST-2 demo's int4 file it lifts the logits' cosine with float from 0.975 to
    0.980 and dev accuracy from 88.76 to 89.33 (float: 88.99).  Hadamard rotation agreed better still, but
    adds a custom op that no phone runtime has.  ``on_grid`` (:func:`on_int4_grid`): min-max only, which
    reproduces weights already on the int4 grid, where OCTAV's smaller scales would move them."""
    from ai_edge_quantizer import quantizer

    clippings = INT4_CLIPPING if precision.startswith("int4") and not on_grid else ("min-max",)
    for clipping in clippings:
        qt = quantizer.Quantizer(model_bytes(float_path), recipe_for(precision, float_scopes, float_ops, clipping))
        with quiet():
            qt.quantize(calibrated, enable_progress_report=False).export_model(str(dest), overwrite=True)
        if not nonpositive_scales(dest):
            return clipping
    raise RuntimeError(f"{dest.name}: the quantiser wrote zero or negative scales: {nonpositive_scales(dest)}")


def on_int4_grid(float_path: Path) -> bool:
    """Whether every Linear's weight in ``float_path`` already sits on its int4 grid (``int4-tune`` put it there)."""
    from ..weights.int4_grid import on_grid
    from .tflite_graph import fully_connected_weights

    weights = fully_connected_weights(float_path)
    return bool(weights) and all(on_grid(w) for w in weights)


def nonpositive_scales(path: Path) -> list[str]:
    """Tensors whose quantisation scales are not all positive and finite (a file no runtime should trust)."""
    return [name for name, q in quantised_tensors(path) if not (q.ScaleAsNumpy() > 0).all()]


def _exactly(scopes: list[str]) -> str:
    """A pattern matching exactly these scopes, one alternation (each recipe entry is tried on every op)."""
    return "^(?:" + "|".join(re.escape(scope) for scope in scopes) + ")$"
