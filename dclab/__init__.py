"""dclab: measure real QUIC and TCP stacks over emulated Dual Connectivity."""

__version__ = "0.1.0"
