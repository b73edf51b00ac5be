"""One run's testbed: namespaces, host settings, the emulator process, run directories and
the record of the environment. ``Testbed`` is the context manager experiments use."""

from ..dcemu.process import NotReady
from .bed import Bed, stats_ms
from .testbed import PartDied, Testbed, TestbedError

__all__ = ["Bed", "NotReady", "PartDied", "Testbed", "TestbedError", "stats_ms"]
