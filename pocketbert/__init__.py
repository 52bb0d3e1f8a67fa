"""PocketBERT: distilled BERT checkpoints to verified on-device bundles.

converter/   checkpoint -> ONNX and TFLite bundle (python -m converter, pocketbert-convert)
runtime/     the torch-free runtime that reads bundles (python -m runtime, pocketbert-run)
benchmarks/  latency, accuracy and gates (python -m benchmarks, pocketbert-bench)
demo_models/ the two built-in demo checkpoints (sst2-demo, ner-demo)
locations.py default places for data, results and caches: a source checkout vs an installed wheel
cli_options.py command-line options the converter and the benchmarks share
"""
