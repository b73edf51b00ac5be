"""quinn (Rust QUIC) through our own Rust program ``dclab-quinn`` (HTTP/3 with h3)."""
