"""PocketBERT benchmarks: latency and accuracy of converted bundles."""
