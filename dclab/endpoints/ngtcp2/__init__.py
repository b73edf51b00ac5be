"""ngtcp2 through Debian's gtlsserver/gtlsclient example programs."""
