"""`python -m runtime` from the repository root: forwards to pocketbert/runtime/ (installed: pocketbert-run)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("pocketbert.runtime", run_name="__main__", alter_sys=True)
