"""The GPU's SM clock, power draw and temperature while a benchmark runs, sampled in the
background through NVML (a GPU at its power cap throttles: a TFLOP/s figure says little
without its clock). Where NVML cannot be loaded nothing is sampled, and the result says why."""
from __future__ import annotations

import statistics
import threading
import time

try:        # nvidia-ml-py is a dependency and pure Python; NVML itself loads at nvmlInit()
    import pynvml
except ImportError:         # an install without it: sampled nothing, said why
    pynvml = None

NOT_SAMPLED = "clocks and power not sampled"


class ClockLog:
    """`with ClockLog(pci_bus_id) as log:` samples every `period_ms`; log.window(t0, t1) is
    what was sampled between two time.monotonic() readings. The device is found by PCI bus
    id (CUDA's ordinals and NVML's indices need not agree); None samples NVML's first GPU."""

    def __init__(self, device: str | None, period_ms: int = 250):
        self.device, self.period_ms = device, period_ms
        self.samples: list[tuple[float, float, float, float]] = []   # (t, MHz, W, °C)
        self.timed: list[tuple[float, float]] = []     # the windows something was timed in
        self.thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.note = "" if pynvml else f"nvidia-ml-py (pynvml) not installed: {NOT_SAMPLED}"

    def __enter__(self) -> "ClockLog":
        if pynvml is None:
            return self
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as e:       # no driver here: NVML Shared Library Not Found
            self.note = f"NVML not loaded ({e}): {NOT_SAMPLED}"
            return self
        try:
            handle = (pynvml.nvmlDeviceGetHandleByPciBusId(self.device) if self.device
                      else pynvml.nvmlDeviceGetHandleByIndex(0))
        except pynvml.NVMLError as e:
            self.note = f"NVML has no GPU at {self.device or 'index 0'} ({e}): {NOT_SAMPLED}"
            pynvml.nvmlShutdown()
            return self
        self.thread = threading.Thread(target=self._read, args=(handle,), daemon=True)
        self.thread.start()
        return self

    def _read(self, handle) -> None:
        while True:
            try:
                self.samples.append((
                    time.monotonic(), float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                    pynvml.nvmlDeviceGetPowerUsage(handle) / 1000,      # mW
                    float(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))))
            except pynvml.NVMLError:        # a reading not supported or lost: not a sample
                pass
            if self._stop.wait(self.period_ms / 1000):
                return

    def __exit__(self, *exc) -> None:
        if self.thread is not None:
            self._stop.set()
            self.thread.join(timeout=5)
            self.thread = None
            pynvml.nvmlShutdown()

    def window(self, t0: float, t1: float) -> tuple[float, float] | None:
        """(median SM clock MHz, median power W) of the samples taken in [t0, t1], else None."""
        got = [s for s in list(self.samples) if t0 <= s[0] <= t1]
        return (statistics.median(s[1] for s in got), statistics.median(s[2] for s in got)) if got else None

    def summary(self, windows: list[tuple[float, float]]) -> dict:
        """Over the samples taken in `windows`: clock and power (median, min, max), the hottest
        temperature and the sample count; or the note why there are none."""
        got = [s for s in list(self.samples) if any(t0 <= s[0] <= t1 for t0, t1 in windows)]
        if not got:
            return {"samples": 0, "note": self.note or "no samples while timing"}
        out = {"samples": len(got), "period_ms": self.period_ms, "tool": "NVML"}
        for key, i in (("clock_mhz", 1), ("power_w", 2)):
            xs = [s[i] for s in got]
            out[key] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
        out["temperature_c_max"] = max(s[3] for s in got)
        return out
