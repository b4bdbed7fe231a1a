"""Retrieval: querying the search index (``search``) and scoring it on labelled questions
(``evaluate``)."""
