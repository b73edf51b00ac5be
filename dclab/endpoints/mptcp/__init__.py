"""Kernel MPTCP (``adapter.py``)."""
