"""`python -m benchmarks` from the repository root: the code is pocketbert/benchmarks/ (installed: the pocketbert-bench command)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("pocketbert.benchmarks", run_name="__main__", alter_sys=True)
