"""Progress on stderr for plans that take more than a second (a 10^6-offer store).

Shown only on a terminal and only from the main thread (the CLI): never in piped or redirected
output, never from the web server's worker threads. The line is erased when the plan ends, so
--json / --csv output and the rendered table are unchanged.
"""
from __future__ import annotations

import sys
import threading
import time

SHOW_AFTER_S = 1.0


class Progress:
    def __init__(self, label: str, stream=None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.monotonic()
        self.shown = False
        try:
            self.enabled = threading.current_thread() is threading.main_thread() and self.stream.isatty()
        except (AttributeError, ValueError):
            self.enabled = False

    def step(self, text: str) -> None:
        """Say what the plan is doing now, once it has run for more than a second."""
        if not self.enabled or time.monotonic() - self.t0 < SHOW_AFTER_S:
            return
        try:
            self.stream.write(f"\r\x1b[K{self.label}: {text} ({time.monotonic() - self.t0:.1f} s)")
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):
            self.enabled = False

    def done(self) -> None:
        if self.shown:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.shown = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.done()
