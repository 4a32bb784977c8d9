"""The GPU's SM clock, power draw and temperature while a benchmark runs, sampled in the
background by nvidia-smi (an H100 throttles at its power cap: a TFLOP/s figure says little
without the clock it ran at). Without nvidia-smi nothing is sampled and the result says so.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import threading
import time

QUERY = "clocks.sm,power.draw,temperature.gpu"


class ClockLog:
    """`with ClockLog(pci_bus_id) as log:` samples every `period_ms`; log.window(t0, t1) is
    what was sampled between two time.monotonic() readings."""

    def __init__(self, device: str | None, period_ms: int = 250, smi: str | None = None):
        self.device, self.period_ms = device, period_ms
        self.smi = smi or shutil.which("nvidia-smi")
        self.samples: list[tuple[float, float, float, float]] = []   # (t, MHz, W, °C)
        self.timed: list[tuple[float, float]] = []     # the windows something was timed in
        self.proc = self.thread = None
        self.note = "" if self.smi else "nvidia-smi not found: clocks and power not sampled"

    def __enter__(self) -> "ClockLog":
        if not self.smi:
            return self
        cmd = [self.smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
               f"-lms={self.period_ms}"] + ([f"--id={self.device}"] if self.device else [])
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         text=True)
        except OSError as e:
            self.note = f"nvidia-smi did not start ({e}): clocks and power not sampled"
            return self
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                mhz, watts, temp = (float(x) for x in line.split(","))
            except ValueError:      # "[N/A]" or a message: not a sample
                continue
            self.samples.append((time.monotonic(), mhz, watts, temp))

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.thread.join(timeout=5)

    def window(self, t0: float, t1: float) -> tuple[float, float] | None:
        """(median SM clock MHz, median power W) of the samples taken in [t0, t1], else None."""
        got = [s for s in list(self.samples) if t0 <= s[0] <= t1]
        if not got:
            return None
        return statistics.median(s[1] for s in got), statistics.median(s[2] for s in got)

    def summary(self, windows: list[tuple[float, float]]) -> dict:
        """Over the samples taken while something was timed: clock and power (median, min,
        max) and the hottest temperature; how many samples; or the note why there are none."""
        got = [s for s in list(self.samples) if any(t0 <= s[0] <= t1 for t0, t1 in windows)]
        if not got:
            return {"samples": 0, "note": self.note or "no samples while timing"}
        out = {"samples": len(got), "period_ms": self.period_ms, "tool": "nvidia-smi"}
        for key, i in (("clock_mhz", 1), ("power_w", 2)):
            xs = [s[i] for s in got]
            out[key] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
        out["temperature_c_max"] = max(s[3] for s in got)
        return out

