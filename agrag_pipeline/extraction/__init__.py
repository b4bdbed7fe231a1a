"""Schema-guided entity and relation extraction over chunks (the knowledge graph's facts).

``settings`` names the chat endpoint (not fingerprinted: it says where, not what); ``client``
speaks the OpenAI Chat Completions API; ``cache`` keeps every answer by the request that decided
it; ``prompt`` builds the messages and the JSON Schema from the graph schema; ``extract`` runs
one chunk (gleanings, validation, dropped items by reason); ``merge`` gives entities and
relations their ids and the per-document mention tables; ``step`` is what the Dagster
``extractions`` asset and ``agrag core`` call.
"""
