"""``preload`` loads what a document's first reading would, and nothing a fork must not inherit.

The run forkserver calls it before forking every run's worker; a thread it started (or torch's
pool) would be copied into each worker without its other threads and could deadlock it.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, os, sys, threading
import agrag_pipeline.definitions
tasks_before = len(os.listdir("/proc/self/task"))
from agrag_pipeline.preload import LAZY_LIBRARIES, preload
preload()
from agrag_pipeline.parsing import quality
print(json.dumps({
    "python_threads": threading.active_count(),
    "new_native_threads": len(os.listdir("/proc/self/task")) - tasks_before,
    "torch": "torch" in sys.modules,
    "missing": [m for m in LAZY_LIBRARIES if m not in sys.modules],
    "english_lexicon_loaded": quality._lexicon.cache_info().currsize > 0,
}))
"""


def test_preloading_loads_the_lazy_readers_and_word_lists_and_starts_no_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    )
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {
        "python_threads": 1,
        "new_native_threads": 0,
        "torch": False,
        "missing": [],
        "english_lexicon_loaded": True,
    }, done.stderr[-2000:]
