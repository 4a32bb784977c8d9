"""The clock and power log of a bench run (perf/clocks.py): NVML sampled in the background,
and what it says without NVML or without a driver."""
from __future__ import annotations

import sys
import types


class FakeNVML(types.ModuleType):
    """A stand-in for pynvml: two alternating readings, or an nvmlInit that fails as it
    does without a driver; records the bus id asked for and balances init/shutdown."""
    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU = 1, 0

    class NVMLError(Exception):
        pass

    def __init__(self, loads=True, readings=((1980, 650500, 61), (1755, 700000, 63))):
        super().__init__("pynvml")
        self.loads, self.readings, self.calls, self.asked, self.open = loads, readings, 0, [], 0

    def nvmlInit(self):
        if not self.loads:
            raise self.NVMLError("NVML Shared Library Not Found")
        self.open += 1

    def nvmlShutdown(self):
        self.open -= 1

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        self.asked.append(bus_id)
        if bus_id != "0000:19:00.0":
            raise self.NVMLError("Not Found")
        return "gpu"

    def nvmlDeviceGetHandleByIndex(self, i):
        self.asked.append(i)
        return "gpu"

    def _reading(self, handle):
        assert handle == "gpu"
        self.calls += 1
        if self.calls == 1:
            raise self.NVMLError("Not Supported")      # like nvidia-smi's [N/A]: skipped
        return self.readings[self.calls % len(self.readings)]

    def nvmlDeviceGetClockInfo(self, handle, kind):
        assert kind == self.NVML_CLOCK_SM
        return self._reading(handle)[0]

    def nvmlDeviceGetPowerUsage(self, handle):       # mW
        return self.readings[self.calls % len(self.readings)][1]

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self.readings[self.calls % len(self.readings)][2]


def _fake_nvml(monkeypatch, fake):
    from cute_gemm.perf import clocks
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(clocks, "pynvml", fake)        # clocks imported pynvml at its top
    return clocks


def test_clock_log_samples_nvml_in_the_background(monkeypatch):
    """perf/clocks.py samples NVML (the device found by PCI bus id) while something is
    timed: per-window medians for the rows, a summary over the timed windows."""
    import time
    from cute_gemm.perf.report import describe_clocks as describe
    fake = FakeNVML()
    clocks = _fake_nvml(monkeypatch, fake)
    with clocks.ClockLog("0000:19:00.0", period_ms=20) as log:
        t0 = time.monotonic()
        time.sleep(0.3)
        t1 = time.monotonic()
        log.timed.append((t0, t1))
    assert fake.asked == ["0000:19:00.0"] and fake.open == 0 and log.thread is None
    mhz, watts = log.window(t0, t1)
    assert 1755 <= mhz <= 1980 and 650.5 <= watts <= 700.0
    s = log.summary(log.timed)
    assert s["samples"] >= 4 and s["clock_mhz"]["min"] == 1755 and s["power_w"]["max"] == 700.0
    assert s["temperature_c_max"] == 63 and s["tool"] == "NVML"
    assert "(NVML, " in describe(s) and "SM clock median" in describe(s)
    assert log.window(t1 + 10, t1 + 11) is None
    n = len(log.samples)
    time.sleep(0.05)
    assert len(log.samples) == n                        # the sampler stopped with the block
    with clocks.ClockLog(None, period_ms=20):
        pass
    assert fake.asked[-1] == 0 and fake.open == 0       # no bus id: NVML's first GPU


def test_clock_log_without_nvml_says_why(monkeypatch):
    """No driver (NVML does not load), no GPU at that bus id, or no pynvml at all: nothing
    is sampled, and the summary's note says why in one line."""
    from cute_gemm.perf.report import describe_clocks as describe
    clocks = _fake_nvml(monkeypatch, FakeNVML(loads=False))
    with clocks.ClockLog("0000:19:00.0") as missing:
        pass
    s = missing.summary([(0, 1e12)])
    assert s["samples"] == 0 and s["note"] == ("NVML not loaded (NVML Shared Library Not Found): "
                                               "clocks and power not sampled")
    assert "not sampled" in describe(missing.summary([]))
    fake = FakeNVML()
    clocks = _fake_nvml(monkeypatch, fake)
    with clocks.ClockLog("0000:01:00.0") as other:
        pass
    assert "NVML has no GPU at 0000:01:00.0" in other.summary([])["note"] and fake.open == 0
    monkeypatch.setattr(clocks, "pynvml", None)
    with clocks.ClockLog("0000:19:00.0") as absent:
        pass
    assert absent.summary([])["note"].startswith("nvidia-ml-py (pynvml) not installed")


def test_clock_log_on_this_machine_without_a_driver():
    """The real pynvml here (no driver, no GPU): entering and leaving is quiet, and the note
    says NVML did not load; on a GPU host it samples instead."""
    from cute_gemm.perf.clocks import ClockLog
    with ClockLog(None, period_ms=10) as log:
        pass
    assert log.note == "" or "not sampled" in log.note
