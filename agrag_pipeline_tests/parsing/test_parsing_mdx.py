"""MDX (``.mdx``): read as the Markdown a site shows, its ES module blocks and expression
comments left out, fenced code untouched. The fixture is mdx-js's own "What is MDX?" page
(mdx-js/mdx, MIT: ``fixtures/README.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agrag_pipeline.parsing import mdx, parse_document
from agrag_pipeline.parsing.detect import MARKDOWN, detect_media_type
from agrag_pipeline.parsing.errors import EmptyDocumentError
from agrag_pipeline_tests.parsing.parsed_support import parse_checked

WHAT_IS_MDX = Path(__file__).parent.parent / "fixtures" / "mdx" / "what-is-mdx.mdx"

#: A Docusaurus page: front matter, imports, a component with tabs, a comment, an example.
DOCUSAURUS_PAGE = """---
title: Installing the agent
sidebar_position: 2
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';

# Installing the agent

{/* TODO: screenshots for every platform */}
Pick your platform.

<Tabs groupId="os">
  <TabItem value="linux" label="Linux">

Download the tarball and unpack it into `/opt/agent`.

  </TabItem>
  <TabItem value="mac" label="macOS">

Install it with Homebrew.

  </TabItem>
</Tabs>

```js
import {start} from 'agent'
export default start
```

export const toc = [{value: 'Installing', id: 'installing'}];
"""


def test_mdx_files_are_markdown() -> None:
    assert detect_media_type("docs/intro.mdx", WHAT_IS_MDX.read_bytes()) == MARKDOWN


def test_module_blocks_and_comments_are_left_out_and_the_page_is_read() -> None:
    parsed = parse_checked(WHAT_IS_MDX.read_bytes(), "docs/what-is-mdx.mdx")
    text = parsed.text_layer
    assert text.lstrip().startswith("# What is MDX?\n\nThis article explains what the MDX")
    assert "export const info" not in text and "navSortSelf" not in text
    assert "{/* more */}" not in text
    headings = [(s.level, s.heading) for s in parsed.sections if s.heading]
    assert headings[:3] == [(1, "What is MDX?"), (2, "Contents"), (2, "Prerequisites")]
    assert (3, "ESM") in headings
    # Code examples keep the syntax they show, comments and imports included.
    assert "{/* A comment! */}" in text
    assert "import {External} from './some/place.js'" in text


def test_a_docusaurus_page_reads_as_its_prose_and_tabs() -> None:
    parsed = parse_checked(DOCUSAURUS_PAGE.encode(), "docs/install.mdx")
    text = parsed.text_layer
    assert "import Tabs" not in text and "TODO: screenshots" not in text
    assert "export const toc" not in text
    assert "Download the tarball and unpack it into `/opt/agent`." in text
    assert "Install it with Homebrew." in text
    assert "import {start} from 'agent'\nexport default start" in text  # the example's own
    assert [s.heading for s in parsed.sections if s.heading] == ["Installing the agent"]


def test_the_same_text_as_markdown_keeps_every_line() -> None:
    # Only ``.mdx`` files are MDX: a Markdown file's "import" sentence is prose.
    text = "import this\n\nexport that\n"
    assert parse_document(text.encode(), "notes.md").text_layer == text
    assert mdx.as_markdown(text) == ""


def test_an_mdx_file_of_nothing_but_code_is_empty() -> None:
    with pytest.raises(EmptyDocumentError, match=r"only code"):
        parse_document(b"import A from './a'\nexport default A\n", "only.mdx")
