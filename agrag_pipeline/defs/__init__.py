"""The Dagster shell: assets, checks, sensor, schedule and resources around the plain core.

Nothing here parses, chunks or embeds: an asset body reads its inputs through the core, calls
it, and reports what happened as metadata.
"""
