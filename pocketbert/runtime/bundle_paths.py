"""The bundle boundary: every file the runtime reads is named by the bundle and lies inside its directory.

Bundles are downloaded and copied between machines, so a manifest is untrusted input: a name such as
``../../home/me/.ssh/id_rsa``, ``/etc/passwd`` or a symbolic link pointing out of the directory must
not make the runtime open a file elsewhere.  The rule (docs/manifest.md, "Paths"):

* a name is a relative path with ``/`` separators: not absolute, no drive, no backslash, and no
  empty, ``.`` or ``..`` component;
* after following every symbolic link it must still lie inside the bundle directory.  Links that stay
  inside (``model.onnx -> store/model.onnx``) are allowed: copying tools keep them and they reach
  nothing the bundle does not hold.  The bundle directory itself may be a link (``bundles/latest``):
  containment is judged against its real path.

:func:`resolve_inside` is the one gate; ``Bundle`` sends every read through it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from .errors import BundleError

FIX = ("every file a bundle names must lie inside the bundle directory: use the directory written by "
       "`pocketbert-convert … --out DIR` as it was written, with no names or symbolic links leading out of it")


def _show(name: str) -> str:
    return repr(name if len(name) <= 120 else name[:117] + "...")


def check_name(name: object, entry: str) -> str:
    """``name`` if it is a plain relative path; else a BundleError naming ``entry`` (the manifest field)."""
    if not isinstance(name, str):
        raise BundleError(f"manifest.json: {entry} must be a file name (a string), not {type(name).__name__}", FIX)
    reason = None
    if not name or "\x00" in name:
        reason = "empty" if not name else "it contains a NUL character"
    elif PurePosixPath(name).is_absolute() or PureWindowsPath(name).drive:
        reason = "it is an absolute path"
    elif "\\" in name:
        reason = "it contains a backslash (bundle paths use /)"
    elif ".." in name.split("/"):
        reason = "it has a '..' component"
    elif any(part in ("", ".") for part in name.split("/")):
        reason = "it has an empty or '.' component"
    if reason:
        raise BundleError(f"manifest.json: {entry} {_show(name)} is not a path inside the bundle: {reason}", FIX)
    return name


def resolve_inside(root: Path, name: object, entry: str) -> Path:
    """The real path of bundle file ``name`` (symbolic links followed), which must lie inside ``root``.

    ``root`` is the bundle directory's real path (``Path.resolve()``).  The file need not exist: a missing
    file is reported by the caller, which knows whether it is needed.
    """
    name = check_name(name, entry)
    try:
        real = (root / name).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop (Python 3.11)
        raise BundleError(f"{entry} {_show(name)} cannot be resolved: {exc}", FIX) from None
    if real == root or not real.is_relative_to(root):
        raise BundleError(f"{entry} {_show(name)} leads through a symbolic link to {str(real)!r}, outside the "
                          f"bundle {str(root)!r}", FIX)
    return real
