"""``preload`` loads what a document's first reading would, and nothing a fork must not inherit.

The run forkserver calls it before forking every run's worker. A Python thread it started would
be copied into each worker without its code running, and a torch thread pool started before the
fork would not survive it: the test forks a preloaded process, whose model was built on one
torch thread, and embeds real texts in the child with that model on the thread count torch had
before (two here, set before preloading), exactly as a model the child builds itself embeds
them; then writes and searches a LanceDB table there (lancedb was imported before the fork, its
event loop stopped).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, os, sys, threading
import torch
torch.set_num_threads(2)
import agrag_pipeline.definitions
from agrag_pipeline.preload import LAZY_LIBRARIES, preload
preload()
from agrag_pipeline.embedding import sentence_transformer
from agrag_pipeline.parsing import quality
facts = {
    "python_threads": threading.active_count(),
    "torch_threads": torch.get_num_threads(),
    "models_built": len(sentence_transformer._BUILT_BEFORE_FORKING),
    "missing": [m for m in LAZY_LIBRARIES + ("lancedb",) if m not in sys.modules],
    "english_lexicon_loaded": quality._lexicon.cache_info().currsize > 0,
}
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    import tempfile, warnings
    warnings.simplefilter("error")  # what the child is warned of fails it
    import numpy
    from sentence_transformers import SentenceTransformer
    from agrag_pipeline.embedding.sentence_transformer import SentenceTransformerEmbedder
    from agrag_pipeline.embedding.settings import EmbeddingSettings
    import lancedb
    embedder = SentenceTransformerEmbedder.from_settings(EmbeddingSettings())
    (built,) = sentence_transformer._BUILT_BEFORE_FORKING.values()
    texts = ["a forked worker embeds", "after the forkserver preloaded"] * 64
    vectors = embedder.model.encode(texts)
    own = SentenceTransformer(str(embedder.model_dir), device="cpu", local_files_only=True)
    rows = [{"vector": vector.tolist(), "n": n} for n, vector in enumerate(vectors)]
    table = lancedb.connect(tempfile.mkdtemp()).create_table("probe", data=rows)
    nearest = table.search(vectors[3].tolist()).limit(1).to_list()[0]["n"]
    facts = {
        "threads": torch.get_num_threads(),
        "uses_the_preloaded_model": embedder.model is built,
        "as_its_own_model_embeds": bool(numpy.array_equal(vectors, own.encode(texts))),
        "vectors_rows_nearest": [len(vectors), len(vectors[0]), table.count_rows(), nearest % 2],
    }
    os.write(write, json.dumps(facts).encode())
    os._exit(0)
os.close(write)
_, status = os.waitpid(pid, 0)
facts["child_exit"] = status
facts["child"] = json.loads(os.read(read, 1000) or b"null")
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
        "torch_threads": 1,  # so no torch thread pool was started before the fork
        "models_built": 1,
        "missing": [],
        "english_lexicon_loaded": True,
        "child_exit": 0,
        "child": {
            "threads": 2,
            "uses_the_preloaded_model": True,
            "as_its_own_model_embeds": True,
            "vectors_rows_nearest": [128, 384, 128, 1],
        },
    }, done.stderr[-2000:]
