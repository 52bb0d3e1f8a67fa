"""`python -m runtime` from the repository root: the code is pocketbert/runtime/ (installed: the pocketbert-run command)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("pocketbert.runtime", run_name="__main__", alter_sys=True)
