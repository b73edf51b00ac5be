"""aioquic-2020: the study-era aioquic 0.8 (QUIC draft 27) in its own environment."""
