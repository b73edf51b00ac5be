"""quic-go (Go): our HTTP/3 server and client binary, ``go/`` (adapter.py)."""
