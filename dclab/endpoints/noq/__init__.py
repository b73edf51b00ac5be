"""noq (n0-computer's multipath QUIC fork of quinn, Rust) through our own Rust program
``dclab-noq`` (HTTP/0.9-style streams; multipath with ClientSpec.paths)."""
