"""PDF character reading, this checkout against another: characters kept, unmapped, off the page.

What it measures: ``pdf_layout.read_page`` alone (no OCR, no text layer) over every PDF under
the given folders (at most ``--pages`` pages each), per file, and the CPU time of each tree's
run, the two trees alternated ``--rounds`` times in child processes (CPU time of the children,
so other load on a shared machine counts little). The other tree is an export of older code,
e.g. ``git worktree add /tmp/old HEAD~3``::

    python -m benchmarks.pdf_chars --against /tmp/old ../shared/corpus /data/outside
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def read_files(out: Path, files: list[str], pages: int) -> None:
    """Child side: read each file's first ``pages`` pages; write the counts and text as JSON."""
    import pypdfium2

    from agrag_pipeline.parsing import pdf_layout

    try:  # an older tree has no glyph names
        from agrag_pipeline.parsing.pdf_glyph_names import GlyphNames
    except ImportError:
        GlyphNames = None  # type: ignore[assignment,misc]
    found: dict[str, dict[str, object]] = {}
    for name in files:
        raw = Path(name).read_bytes()
        try:
            pdf = pypdfium2.PdfDocument(raw)
        except pypdfium2.PdfiumError:
            continue
        names = GlyphNames(raw) if GlyphNames is not None else None
        chars = unmapped = off_page = 0
        text: list[str] = []
        for index in range(min(len(pdf), pages)):
            page = pdf[index]
            if names is not None:
                read = pdf_layout.read_page(page, index + 1, names)
            else:
                read = pdf_layout.read_page(page, index + 1)
            page.close()
            chars, unmapped = chars + read.chars, unmapped + read.unmapped
            off_page += getattr(read, "off_page", 0)
            text += [getattr(item, "text", "") for item in read.items]
        pdf.close()
        found[name] = {"chars": chars, "unmapped": unmapped, "off_page": off_page, "text": text}
    out.write_text(json.dumps(found), encoding="utf-8")


def _run(tree: Path, out: Path, files: list[str], pages: int) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # This file run as a script (the other tree need not have it), the other tree's package.
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(out), "--pages"]
    subprocess.run(
        [*command, str(pages), *files],
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tree,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--against", type=Path, help="another checkout of the project")
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)
    if args.child is not None:
        read_files(args.child, [str(f) for f in args.folders] + rest, args.pages)
        return
    files = sorted(str(p.resolve()) for f in args.folders for p in Path(f).rglob("*.pdf"))
    trees = {"this": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    with tempfile.TemporaryDirectory() as tmp:
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                cpu[name].append(_run(tree, Path(tmp) / f"{name}.json", files, args.pages))
        results = {n: json.loads((Path(tmp) / f"{n}.json").read_text()) for n in trees}
    ours = results["this"]
    theirs = results.get("against", ours)
    print(f"{len(files)} PDFs, first {args.pages} pages each; load {os.getloadavg()[0]:.1f}")
    for name in files:
        a, b = theirs.get(name), ours.get(name)
        if a is None or b is None or a == b:
            continue
        print(
            f"{Path(name).name}: chars {a['chars']} -> {b['chars']}, unmapped {a['unmapped']} "
            f"-> {b['unmapped']}, off the page {b['off_page']}"
        )
    for name, times in cpu.items():
        print(f"CPU s ({name}): {', '.join(f'{t:.2f}' for t in times)}")


if __name__ == "__main__":
    main()
