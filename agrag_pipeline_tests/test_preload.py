"""``preload`` loads what a document's first reading would, and nothing a fork must not inherit.

The run forkserver calls it before forking every run's worker. A Python thread it started would
be copied into each worker without its code running, and a torch thread pool started before the
fork would not survive it: the test forks a preloaded process and embeds real texts with the
shipped model, on two threads, in the child, then writes and searches a LanceDB table there
(lancedb was imported before the fork, its event loop stopped).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, os, sys, threading
import agrag_pipeline.definitions
from agrag_pipeline.preload import LAZY_LIBRARIES, preload
preload()
from agrag_pipeline.parsing import quality
facts = {
    "python_threads": threading.active_count(),
    "missing": [m for m in LAZY_LIBRARIES + ("lancedb",) if m not in sys.modules],
    "english_lexicon_loaded": quality._lexicon.cache_info().currsize > 0,
}
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    import tempfile, warnings
    warnings.simplefilter("error")  # what the child is warned of fails it
    import torch
    from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder
    from agrag_pipeline.embedding.settings import EmbeddingSettings
    import lancedb
    torch.set_num_threads(2)
    model = SentenceTransformerEmbedder.from_settings(EmbeddingSettings()).model
    vectors = model.encode(["a forked worker embeds", "after the forkserver preloaded"] * 64)
    rows = [{"vector": vector.tolist(), "n": n} for n, vector in enumerate(vectors)]
    table = lancedb.connect(tempfile.mkdtemp()).create_table("probe", data=rows)
    nearest = table.search(vectors[3].tolist()).limit(1).to_list()[0]["n"]
    facts = [len(vectors), len(vectors[0]), table.count_rows(), nearest % 2]
    os.write(write, json.dumps(facts).encode())
    os._exit(0)
os.close(write)
_, status = os.waitpid(pid, 0)
facts["child_exit"] = status
facts["child_vectors_rows_nearest"] = json.loads(os.read(read, 100) or b"null")
print(json.dumps(facts))
"""


def test_a_preloaded_process_holds_no_thread_and_its_forked_child_embeds_and_indexes() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {
        "python_threads": 1,
        "missing": [],
        "english_lexicon_loaded": True,
        "child_exit": 0,
        "child_vectors_rows_nearest": [128, 384, 128, 1],
    }, done.stderr[-2000:]
