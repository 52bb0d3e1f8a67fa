"""`python -m converter` from the repository root: the code is pocketbert/converter/ (installed: the pocketbert-convert command)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("pocketbert.converter", run_name="__main__", alter_sys=True)
