"""One parse + chunk pass on demand, for ``chunking_bench --ref``: another version's code timed
in turn with ours and the peers.

Run as a script (not ``-m``) with ``PYTHONPATH`` at that version's ``agrag_pipeline`` tree, so
only the public calls every version has are used. It parses and chunks the given files once
(warm-up), prints ``ready``, then answers each line on stdin with one timed pass: the
seconds and CPU seconds it took, and the number of chunks.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main(paths: list[str]) -> None:
    from agrag_pipeline.chunking.chunker import StructureChunker
    from agrag_pipeline.chunking.settings import ChunkerSettings
    from agrag_pipeline.chunking.tokens import TokenCounter
    from agrag_pipeline.parsing import parse_document

    raws = [(Path(p).name, Path(p).read_bytes()) for p in paths]
    chunker = StructureChunker(ChunkerSettings(), TokenCounter(), max_sequence_tokens=256)

    def one_pass() -> int:
        n = 0
        for key, raw in raws:
            parsed = parse_document(raw, key)
            n += len(chunker.chunk(parsed, schema_fingerprint=None, extraction_fingerprint=None))
        return n

    one_pass()
    print("ready", flush=True)
    for _ in sys.stdin:
        cpu, start = time.process_time(), time.perf_counter()
        n = one_pass()
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{seconds:.6f} {cpu:.6f} {n}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
