"""The tables and images of an HTML report, for tests that read reports."""

from __future__ import annotations

from html.parser import HTMLParser


class Tables(HTMLParser):
    """Rows of cell texts per table class, and every <img src>."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.imgs: list[str] = []
        self._cls: str | None = None
        self._row: list[str] | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._cls = a.get("class", "")
            self.tables.setdefault(self._cls, [])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "img":
            self.imgs.append(a["src"])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell or "")
            self._cell = None
        elif tag == "tr" and self._row is not None and self._cls is not None:
            self.tables[self._cls].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
