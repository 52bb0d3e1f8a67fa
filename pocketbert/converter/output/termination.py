"""SIGTERM unwinds like Ctrl-C while a staging directory exists (converter.output.staging), so that it is removed.

Python's default for SIGTERM ends the process on the spot: no ``finally``, no ``__exit__``, and the
``.OUT.partial-PID-*`` directory of a conversion stays behind until the next run for that --out.
"""

from __future__ import annotations

import signal
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that the staging directory goes as it does on Ctrl-C."""


class SigtermAsInterrupt:
    """While a staging directory exists, SIGTERM unwinds like Ctrl-C: Python's default ends the process on the
    spot and leaves the directory behind.  Only from the main thread, and only over the default handler (an
    application that set its own keeps it).  During the clean-up a SIGTERM is held until it is done."""

    def __init__(self):
        self.installed = False
        self.held = False

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._raise)
            self.installed = True

    def hold(self) -> None:
        if self.installed:
            signal.signal(signal.SIGTERM, self._hold)

    def uninstall(self) -> None:
        """Back to the default; a SIGTERM held meanwhile is raised now."""
        if self.installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self.installed = False
            if self.held:
                raise Terminated()

    @staticmethod
    def _raise(signum, frame):
        raise Terminated()

    def _hold(self, signum, frame):
        self.held = True
