"""reStructuredText (``.rst``): docutils reads it, our HTML parser writes the text layer.

docutils (public domain/BSD) is the reference reader of the format: the document is converted to
HTML5 and extracted by ``html.extract``, so section titles become headings (the document title
level 1, its sections one deeper per nesting, as docutils nests them), lists, tables, literal
blocks and admonitions read as they do in HTML, and markup characters are gone.

Never outside the file: ``include``, ``raw`` with ``:file:``/``:url:``, ``csv-table`` with
``:file:`` and other file insertion are disabled (docutils' ``file_insertion_enabled`` and
``raw_enabled`` settings), no configuration file is read, and docutils writes no messages to
stderr. Sphinx's common roles (``:ref:``, ``:class:``, …) read as their text instead of as
errors; directives docutils does not know keep their content as a literal block (a project's
``click:example`` code), except Sphinx's API and build directives (``toctree``,
``automodule``), which leave nothing. A document so
broken that docutils gives up is an error naming the file.
"""

from __future__ import annotations

import re
from typing import Any

from agrag_pipeline.models import Document
from agrag_pipeline.parsing import html
from agrag_pipeline.parsing.budget import current_deadline
from agrag_pipeline.parsing.errors import CorruptDocumentError, EmptyDocumentError
from agrag_pipeline.parsing.parsed import ParsedDocument
from agrag_pipeline.parsing.tree import build_sections

MEDIA_TYPE = "text/x-rst"

#: docutils settings: nothing read from disk or the network, nothing printed, never halt on a
#: problem docutils can recover from.
_SETTINGS: dict[str, Any] = {
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "_disable_config": True,
    "report_level": 5,
    "halt_level": 5,
    "warning_stream": False,
    "traceback": True,
    "embed_stylesheet": False,
    "stylesheet_path": "",
    "stylesheet": "",
    "input_encoding": "unicode",
    "output_encoding": "unicode",
    "doctitle_xform": True,
    "sectsubtitle_xform": False,
    "syntax_highlight": "none",
    "math_output": "LaTeX",
}

#: Sphinx's cross-reference and inline roles: read as their text (``:ref:`Intro <x>``` -> Intro).
_SPHINX_ROLES = (
    *("ref", "doc", "term", "numref", "keyword", "option", "envvar", "token", "download"),
    *("class", "func", "meth", "mod", "attr", "exc", "data", "obj", "const", "any", "program"),
    *("file", "samp", "command", "kbd", "menuselection", "guilabel", "abbr", "dfn", "makevar"),
    *("py:class", "py:func", "py:meth", "py:mod", "py:attr", "py:exc", "py:data", "py:obj"),
    *("c:func", "c:type", "c:macro", "c:data", "c:member", "cpp:class", "cpp:func"),
    *("pep", "rfc", "mimetype", "newsgroup", "regexp", "source", "issue", "gh"),
)
#: Sphinx directives whose content is text a reader sees (others, such as ``toctree`` or
#: ``automodule``, leave nothing; ``literalinclude`` would read a file and is never run).
_SPHINX_CONTENT_DIRECTIVES = (
    *("versionadded", "versionchanged", "deprecated", "versionremoved", "seealso", "glossary"),
    *("only", "hlist", "centered", "tab", "tabs", "tab-set", "tab-item", "card"),
    *("productionlist", "doctest", "testcode", "testoutput", "ipython", "jupyter-execute"),
)
_registered = False


def _register_roles() -> None:
    """Sphinx roles as plain-text roles (once per process: docutils keeps a global registry)."""
    global _registered
    if _registered:
        return
    from docutils import nodes
    from docutils.parsers.rst import directives, roles

    def as_text(
        name: str,
        rawtext: str,
        text: str,
        lineno: int,
        inliner: object,
        options: object = None,
        content: object = None,
    ) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        # ":ref:`Title <target>`" and "~pkg.Name": the reader sees the title or the name.
        shown = text
        if shown.endswith(">") and "<" in shown:
            shown = shown[: shown.rindex("<")].strip() or shown
        shown = shown.lstrip("~!")
        return [nodes.literal(rawtext, shown)], []

    for name in _SPHINX_ROLES:
        if name not in roles._roles:  # never replace a role docutils defines itself
            roles.register_local_role(name, as_text)
    for name in _SPHINX_CONTENT_DIRECTIVES:
        if name not in directives._directives:
            directives.register_directive(name, _content_directive())
    _registered = True


class _AnyOption(dict):
    """An option spec that accepts every option (Sphinx directives have many)."""

    def __getitem__(self, key: str) -> Any:
        from docutils.parsers.rst import directives

        return directives.unchanged

    def __contains__(self, key: object) -> bool:
        return True


#: Directives that carry no text a reader sees (Sphinx's API and build directives).
_SILENT_DIRECTIVES = frozenset(
    {
        *("toctree", "index", "highlight", "currentmodule", "module", "literalinclude"),
        *("sectionauthor", "moduleauthor", "codeauthor", "tabularcolumns", "default-role"),
        *("default-domain", "code-include", "program", "py:currentmodule", "py:module"),
    }
)
_DIRECTIVE_LINE = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z][\w:.+-]*)[ \t]*::", re.MULTILINE)


def _register_unknown_directives(text: str) -> None:
    """Directives docutils does not know (a project's ``click:example``, Sphinx's
    ``automodule``): their content kept as a literal block (it is often code) instead of being
    lost with an error; API and build directives (``toctree``, ``automodule``) leave nothing.
    Neither kind ever reads a file (``literalinclude`` included)."""
    from docutils.parsers.rst import directives
    from docutils.parsers.rst.languages import en

    for name in set(_DIRECTIVE_LINE.findall(text)):
        lowered = name.lower()
        if (
            lowered in directives._directives
            or lowered in directives._directive_registry
            or lowered in en.directives
        ):
            continue
        silent = lowered in _SILENT_DIRECTIVES or lowered.split(":")[-1].startswith("auto")
        directives.register_directive(lowered, _silent_directive() if silent else _verbatim())


def _silent_directive() -> Any:
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class Silent(Directive):
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = _AnyOption()

        def run(self) -> list[nodes.Node]:
            return []

    return Silent


def _verbatim() -> Any:
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class Verbatim(Directive):
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = _AnyOption()

        def run(self) -> list[nodes.Node]:
            out: list[nodes.Node] = []
            if self.arguments:
                out.append(nodes.paragraph(self.arguments[0], self.arguments[0]))
            if self.content:
                code = "\n".join(self.content)
                out.append(nodes.literal_block(code, code))
            return out

    return Verbatim


def _content_directive() -> Any:
    """A directive that keeps its arguments as a line and its content as reStructuredText."""
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class KeepContent(Directive):
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = _AnyOption()

        def run(self) -> list[nodes.Node]:
            container = nodes.container()
            if self.arguments:
                # Sphinx reads "versionadded:: 2.0 text" as one argument: inline markup too.
                inline, messages = self.state.inline_text(self.arguments[0], self.lineno)
                container += nodes.paragraph(self.arguments[0], "", *inline)
                container += messages
            self.state.nested_parse(self.content, self.content_offset, container)
            return [container]

    return KeepContent


def to_html(text: str, source_key: str) -> str:
    """The HTML5 body docutils writes for ``text``."""
    from docutils.core import publish_parts
    from docutils.utils import SystemMessage

    _register_roles()
    _register_unknown_directives(text)
    try:
        parts = publish_parts(
            source=text,
            source_path=source_key,
            writer="html5",
            settings_overrides=dict(_SETTINGS),
        )
    except SystemMessage as exc:
        raise CorruptDocumentError(source_key, f"not readable reStructuredText: {exc}") from exc
    except RecursionError as exc:
        raise CorruptDocumentError(
            source_key, "reStructuredText nested too deeply for docutils to read (lists or quotes)"
        ) from exc
    return str(parts["html_body"])


def parse(text: str, document: Document) -> ParsedDocument:
    """The text layer and sections of decoded reStructuredText ``text``."""
    key = document.source_key
    body = to_html(text, key)
    extracted = html.extract(body, current_deadline(key))
    if not extracted.text.strip():
        raise EmptyDocumentError(key, "the reStructuredText holds no text")
    sections = build_sections(extracted.text, document, extracted.headings, extracted.tables)
    return ParsedDocument(document=document, text_layer=extracted.text, sections=sections)


__all__ = ["MEDIA_TYPE", "parse", "to_html"]
