"""What gtlsclient's gnutls log (GNUTLS_DEBUG_LEVEL 4) says about one connection's
handshake: when the ClientHello and the client's Finished were queued, whether a session
was resumed and whether 0-RTT data was sent and accepted. Pure: the lines and the times
they were read come in (adapter.py reads them)."""

from __future__ import annotations

from dataclasses import dataclass

# gnutls' handshake log (level 4: handshake messages and extensions, nothing per packet).
GNUTLS_ENV = {"GNUTLS_DEBUG_LEVEL": "4"}

# Lines of gnutls 3.7's log (from its handshake, pre-shared key and early data code).
HELLO = "CLIENT HELLO was queued"
FINISHED = "FINISHED was queued"  # the client's Finished: handshake complete on its side
PSK_OFFERED = "Sending extension Pre Shared Key/41"
PSK_SELECTED = "selected PSK-resumption mode"
EARLY_OFFERED = "Sending extension Early Data/42"
EARLY_ACCEPTED = "Parsing extension 'Early Data/42'"  # only in the server's EncryptedExtensions
TP_UNREADABLE = "Could not read transport parameters"  # gtlsclient then sends no 0-RTT


@dataclass
class Handshake:
    """What one client's output says about its handshake; times are when a line was read
    (``time.monotonic()``), None when absent."""

    hello_at: float | None = None
    finished_at: float | None = None
    psk_offered: bool = False
    psk_selected: bool = False
    early_offered: bool = False
    early_accepted: bool = False
    tp_unreadable: bool = False

    def see(self, line: str, at: float) -> None:
        if HELLO in line and self.hello_at is None:
            self.hello_at = at
        elif FINISHED in line and self.finished_at is None:
            self.finished_at = at
        elif PSK_OFFERED in line:
            self.psk_offered = True
        elif PSK_SELECTED in line:
            self.psk_selected = True
        elif EARLY_OFFERED in line:
            self.early_offered = True
        elif EARLY_ACCEPTED in line:
            self.early_accepted = True
        elif TP_UNREADABLE in line:
            self.tp_unreadable = True

    @classmethod
    def parse(cls, lines: list[str]) -> Handshake:
        h = cls()
        for n, line in enumerate(lines):
            h.see(line, float(n))
        return h

    def complete_by(self, firsts: list[float | None], opens: list[float | None], zero_rtt: bool) -> float | None:
        """When the handshake was complete on the client's side at the latest: the earliest
        of its Finished, a body byte (``firsts``: 1-RTT data is readable only then) and,
        without 0-RTT, a request (``opens``; with 0-RTT the requests come first). Each is
        noted a little after it happened, so the earliest is the best bound; None without
        any."""
        marks = [t for t in (self.finished_at, *firsts, *([] if self.early_data(zero_rtt) else opens)) if t is not None]
        return min(marks) if marks else None

    def hello_read_late(self, firsts: list[float | None], opens: list[float | None], zero_rtt: bool) -> bool:
        """Whether the ClientHello line was noted no earlier than the handshake's completion
        (``complete_by``): the line was then read late, and the request and the handshake
        cannot be told apart."""
        done = self.complete_by(firsts, opens, zero_rtt)
        return self.hello_at is not None and done is not None and done <= self.hello_at

    @property
    def logged(self) -> bool:
        """Whether gnutls' log is there at all (else nothing can be told)."""
        return self.hello_at is not None

    def resumed(self) -> bool | None:
        """The server selected the PSK the client offered: a resumed session."""
        return (self.psk_offered and self.psk_selected) if self.logged else None

    def early_data(self, zero_rtt: bool) -> bool | None:
        """0-RTT sent (asked, offered in the ClientHello, transport parameters read) and
        accepted (early_data in the server's EncryptedExtensions)."""
        if not self.logged:
            return None
        return zero_rtt and self.early_offered and not self.tp_unreadable and self.early_accepted and self.resumed() is True
