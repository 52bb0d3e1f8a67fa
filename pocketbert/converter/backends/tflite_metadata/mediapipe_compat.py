"""Whether MediaPipe Tasks' ``TextClassifier`` can run a model on raw text, and if not, why.

MediaPipe Tasks ``TextClassifier`` (mediapipe 1.2.2; tests/test_tflite_metadata.py) runs such a model on
raw text when :func:`mediapipe_blockers` finds nothing: one subgraph (a single bucket), exactly three
int32 inputs (not DistilBERT), float32 logits (fp32 or int8-dynamic, not int8-static), a classification
head, a lower-casing tokenizer.  Its scores are our raw logits (no softmax), sorted, named from
``labels.txt``; it truncates to the bucket like ``truncation=True``.  Its tokenizer lower-cases ASCII
only and neither strips accents nor drops control characters, so such text can get other tokens than
the Hugging Face tokenizer; plain ASCII and CJK text give identical logits."""

from __future__ import annotations

from pathlib import Path

from .reader import metadata_entry, packed_files, read
from .schema import CUSTOM_NAME, METADATA_NAME


def mediapipe_blockers(model_path: Path) -> list[str]:
    """Why MediaPipe Tasks' TextClassifier cannot run this model on raw text; empty if it can.

    Mirrors MediaPipe's checks (text_preprocessing_graph.cc, text_model_utils.cc,
    classification_postprocessing_graph.cc, bert_preprocessor_calculator.cc, metadata_extractor.cc);
    tests/test_tflite_metadata.py confirms each against mediapipe 1.2.2.
    """
    from ai_edge_litert import schema_py_generated as schema

    raw = Path(model_path).read_bytes()
    model, buffer = metadata_entry(raw)
    blockers = []
    if model.SubgraphsLength() != 1:
        blockers.append(f"{model.SubgraphsLength()} subgraphs (one per bucket): MediaPipe text tasks take "
                        "single-subgraph models only; convert with one bucket")
    subgraph = model.Subgraphs(0)
    if subgraph.InputsLength() != 3:
        blockers.append(f"{subgraph.InputsLength()} inputs: MediaPipe's BERT preprocessor needs exactly three "
                        "(ids, mask, segment_ids); DistilBERT has no token_type_ids")
    if subgraph.Tensors(subgraph.Outputs(0)).Type() not in (schema.TensorType.FLOAT32, schema.TensorType.UINT8):
        blockers.append("int8 logits (full-integer model): MediaPipe classifiers take float32 or uint8 outputs")
    if buffer is None:
        return [*blockers, f"no {METADATA_NAME}: MediaPipe needs the tokenizer from the metadata"]
    if buffer.Offset() > 1:
        # mediapipe 1.2.2 crashes (SIGSEGV) on such a model: never hand it one.
        return [*blockers, f"{METADATA_NAME} is stored outside the flatbuffer and the files are not packed "
                           "(ai-edge-quantizer output): embed again after quantizing"]
    meta = read(model_path)
    settings = meta["custom"].get(CUSTOM_NAME, {})
    if meta["labels"] is None or meta["vocab_size"] is None:
        blockers.append("labels.txt or the vocabulary is not packed in the model file")
    else:
        vocab = packed_files(model_path)[meta["tokenizer"]["vocab_file"][0]["name"]].decode("utf-8").splitlines()
        if not {"[CLS]", "[SEP]"} <= set(vocab):
            blockers.append("the vocabulary lacks [CLS] or [SEP], which MediaPipe's BERT preprocessor inserts")
    if settings.get("task") != "classification":
        blockers.append(f"task {settings.get('task')}: TextClassifier reads one [1, labels] row per text, "
                        "NER logits are per token")
    if not settings.get("do_lower_case"):
        blockers.append("cased tokenizer: MediaPipe lower-cases all input text before WordPiece")
    return blockers
