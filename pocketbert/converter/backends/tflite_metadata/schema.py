"""Names, field slots and enum values of the TFLite metadata schema, and the names our metadata uses.

The slots are field numbers in declaration order (a union takes two: type, then value), from
metadata_schema.fbs (tflite-support / MediaPipe mediapipe/tasks/metadata/metadata_schema.fbs, schema
version 1.5.0): writer and reader address fields by them, so neither needs generated code."""

from __future__ import annotations

from pocketbert.runtime.contract import LABELS_FILE  # noqa: F401  (the bundle's file, embedded under its name)

METADATA_NAME = "TFLITE_METADATA"  # Model.metadata entry name metadata readers look for
METADATA_IDENTIFIER = b"M001"
TFLITE_IDENTIFIER = b"TFL3"
CUSTOM_NAME = "pocketbert"

# Our signature input names -> the metadata names MediaPipe's BertPreprocessorCalculator matches.
TENSOR_NAMES = {"input_ids": "ids", "attention_mask": "mask", "token_type_ids": "segment_ids"}

ASSOCIATED_FILE = {"name": 0, "description": 1, "type": 2, "locale": 3, "version": 4}  # 5 slots
BERT_TOKENIZER_OPTIONS = {"vocab_file": 0}  # 1 slot
PROCESS_UNIT = {"options_type": 0, "options": 1}  # 2 slots
CONTENT = {"content_properties_type": 0, "content_properties": 1, "range": 2}  # 3 slots
TENSOR_METADATA = {"name": 0, "description": 1, "dimension_names": 2, "content": 3, "process_units": 4,
                   "stats": 5, "associated_files": 6}  # 7 slots
CUSTOM_METADATA = {"name": 0, "data": 1}  # 2 slots
SUBGRAPH_METADATA = {"name": 0, "description": 1, "input_tensor_metadata": 2, "output_tensor_metadata": 3,
                     "associated_files": 4, "input_process_units": 5, "output_process_units": 6,
                     "input_tensor_groups": 7, "output_tensor_groups": 8, "custom_metadata": 9}  # 10 slots
MODEL_METADATA = {"name": 0, "description": 1, "version": 2, "subgraph_metadata": 3, "author": 4, "license": 5,
                  "associated_files": 6, "min_parser_version": 7}  # 8 slots
# Enum values from the same schema.
FILE_TYPES = {0: "UNKNOWN", 1: "DESCRIPTIONS", 2: "TENSOR_AXIS_LABELS", 3: "TENSOR_VALUE_LABELS",
              4: "TENSOR_AXIS_SCORE_CALIBRATION", 5: "VOCABULARY", 6: "SCANN_INDEX_FILE"}
TENSOR_AXIS_LABELS, VOCABULARY = 2, 5
PROCESS_UNIT_BERT_TOKENIZER = 4  # union ProcessUnitOptions: NONE=0, Normalization, ScoreCalibration, ...
CONTENT_FEATURE_PROPERTIES = 1  # union ContentProperties: NONE=0, FeatureProperties, ...
# Schema history: VOCABULARY 1.0.1, BertTokenizerOptions and input_process_units 1.1.0, CustomMetadata
# 1.5.0.  min_parser_version is the newest feature used; readers older than that refuse the metadata.
MIN_PARSER_VERSION = "1.5.0"

BUFFER_OFFSET_SLOT, BUFFER_SIZE_SLOT = 1, 2  # tflite schema.fbs: table Buffer {data; offset; size}


def vtable_offset(slot: int) -> int:
    """A field's entry in a flatbuffer vtable: after the vtable's own size and the table's size."""
    return 4 + 2 * slot
