"""TFLite model metadata: labels, WordPiece vocabulary and tokenizer in the .tflite itself.

Writes the tflite-support metadata schema (``metadata_schema.fbs``, file identifier ``M001``; the
contract of the TFLite Task Library and MediaPipe Tasks) with the ``flatbuffers`` package alone, so
the converter needs neither tflite-support (pins protobuf < 4) nor mediapipe.  The layout is the one
tflite-support's ``MetadataPopulator`` produces:

* a ``ModelMetadata`` flatbuffer stored in a model buffer, referenced from ``Model.metadata`` under
  the name ``TFLITE_METADATA`` (other entries, e.g. litert-torch's ``min_runtime_version``, stay);
* the associated files (``vocab.txt``, ``labels.txt``) as an uncompressed zip appended to the model
  file; TFLite ignores trailing bytes, metadata readers open the file as a zip.

Input tensors are described under the names MediaPipe's ``BertPreprocessorCalculator`` matches
(``ids``, ``mask``, ``segment_ids``; ours are ``input_ids``, ``attention_mask``, ``token_type_ids``).
The schema has no lower-casing flag (Task Library and MediaPipe always lower-case), so our tokenizer
settings go into a ``CustomMetadata`` entry named ``pocketbert`` (JSON); that field needs parser 1.5.0.

Multi-signature models: ``SubGraphMetadata`` is written for subgraph 0 only.  Metadata readers use
subgraph 0 alone (the schema's "main subgraph"; tflite-support's populator even refuses more than
one ``SubGraphMetadata``), and every bucket subgraph has the same inputs, in the same order, and the
same output, so the one entry describes them all except for the sequence length.

The modules: ``schema`` (names, field slots, enums), ``build`` (the ModelMetadata flatbuffer),
``populate`` (:func:`embed`: into the model file, atomically), ``reader`` (:func:`read` it back),
``mediapipe_compat`` (:func:`mediapipe_blockers`: can MediaPipe's TextClassifier run it).
"""

from __future__ import annotations

from .mediapipe_compat import mediapipe_blockers
from .populate import embed, summary
from .reader import metadata_buffer, packed_files, read
from .schema import CUSTOM_NAME, LABELS_FILE, METADATA_NAME, MIN_PARSER_VERSION, TENSOR_NAMES

__all__ = ["embed", "summary", "read", "metadata_buffer", "packed_files", "mediapipe_blockers", "CUSTOM_NAME",
           "LABELS_FILE", "METADATA_NAME", "MIN_PARSER_VERSION", "TENSOR_NAMES"]
