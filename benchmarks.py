"""`python -m benchmarks` from the repository root: forwards to pocketbert/benchmarks/ (installed: pocketbert-bench)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("pocketbert.benchmarks", run_name="__main__", alter_sys=True)
