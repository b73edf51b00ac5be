"""Kernel TCP: Hypercorn (HTTP/2, TLS 1.3) and curl --http2."""
