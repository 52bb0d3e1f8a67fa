"""PocketBERT: distilled BERT checkpoints to verified on-device bundles.

converter/   checkpoint -> ONNX and TFLite bundle (pocketbert-convert, python -m pocketbert.converter)
runtime/     the torch-free runtime that reads bundles (pocketbert-run, python -m pocketbert.runtime)
benchmarks/  latency, accuracy and gates (pocketbert-bench, python -m pocketbert.benchmarks)
demo_models/ the two built-in demo checkpoints (sst2-demo, ner-demo): data of a checkout, not in the wheel
locations.py default places for data, results and caches: a source checkout vs an installed wheel
cli_options.py command-line options the converter and the benchmarks share
"""
