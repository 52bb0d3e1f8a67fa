"""`python -m converter` from the repository root: forwards to pocketbert/converter/ (installed: pocketbert-convert)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("pocketbert.converter", run_name="__main__", alter_sys=True)
