"""PDF files written object by object for the parser tests that need a structure no
application writes on demand (a tree that holds itself, a given outline, an exact layout)."""

from __future__ import annotations


def pdf_file(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF 1.7 file of ``objects`` (object ``n`` is ``objects[n - 1]``), its cross-reference
    table and trailer, with object ``root`` as the document catalog."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        xref,
    )
    return bytes(out)
