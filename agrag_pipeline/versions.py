"""The versions of what the steps write, bumped when a step writes something else for the same
input. Their own module, beneath both ``pipeline`` (the steps) and ``runtime`` (the configured
parts, which fold them into Dagster code versions), so that the steps never import the runtime
that assembles them (and the sinks)."""

#: Bumped when the snapshot step changes what it writes for the same input.
SNAPSHOT_VERSION = "1"
#: Bumped when the parse step changes what it writes for the same input.
#: 2: PDFs read with PDFium (words, columns, headings, OCR); 3: PDF compound hyphens kept;
#: 4: PDF ligatures keep every letter, tight lines of two sizes apart, dates not headers, images
#: without a resolution tag read at the size of a paper page; 5: every parse scored for reading
#: quality, PDF text in Unicode codes without a map kept, OCR in the page's own language; 6: MathML
#: in JATS and HTML (and JATS ``tex-math``) written as linear LaTeX, an HTML list item's first
#: paragraph on its marker's line, spreadsheet tables kept whole across blank spacer rows and
#: columns, 3-D charts read, Arabic tatweel strokes dropped from PDF text, vertical Japanese read
#: down its columns, HTML navigation, page headers and footers, permalinks and hidden
#: elements left out; PDF outline headings on their real (numbered) lines, code lines whole
#: with their comments, box-corner glyphs out, words split by a page break joined, compounds
#: keep their line-end hyphen, footnotes of a one-page PDF kept, a justified line's wide space
#: no column gutter; without an outline, no heading from an italic sentence or a line of code.
#: 7: PDF text in Type 3 fonts without a ToUnicode map read by its glyph names; characters drawn
#: outside the page's visible box left out; letters beyond the BMP (math italic) read whole;
#: mail parts labelled iso-8859-1 read as windows-1252; AsciiDoc tables by their cols, cell
#: styles and spans; LaTeX author lines kept, \\thanks notes after them; XML text entities;
#: the reading-quality score of a text over 2,048 characters read on a sample (its recorded
#: score and reasons may differ), and structured data and code no longer scored by word lists;
#: PDF paragraphs parted by a small space or a first-line indent (texinfo, LaTeX), a sentence
#: running on over a page break kept in its paragraph, an API's definition lines no headings.
#: PDF: compounds' hyphens, lone page-number-like lines (figure labels) and drawn `_` kept.
#: 8: ZIP member names in the code page their writer used (GBK, Shift_JIS; UTF-8 without the
#: flag), an archive's encrypted or unsupported members listed as not read instead of refusing
#: it; Word and Excel 2003 XML and flat OPC (Office's "XML Document") read as the documents
#: they are, not as generic XML; text boxes and shapes with text on spreadsheet sheets; PDF
#: combining marks (Thai vowels and tone marks) kept in their word, never spaced off;
#: a PDF line that goes on with the sentence the line above left open (lower case after
#: no sentence end) stays in its paragraph though it measures up to 15% smaller (a short last
#: line set mostly in the typewriter face).
#: 9: OCR straightens a skewed scan (a page laid askew on the scanner, up to 20 degrees either
#: way) before reading it: its words, and their boxes, where before a page skewed by a few
#: degrees lost lines and one skewed by 10 gave no word.
#: 10: a running head printed on one page only (a short chapter's "Chapter 7: Title 37") is
#: left out where its number is that page's own, as the document's other running heads number
#: their pages; before, only a head that repeated on other pages was.
#: 11: a PDF glyph much smaller than the one beside it is a token of its own only when it sits
#: off the baseline (a superscript, a footnote mark): small capitals on the baseline are part
#: of their word ("url s" read "urls", "( ascii 7)" "(ascii 7)").
#: 12: a PDF whose outline leaves out its title page's title (a manual's outline starts at
#: chapter 1) gets that title as its first heading, the outline's levels under it: its chunks
#: carry the document's name, as the same manual's HTML carries its <h1>.
#: 13: PDFs made by Sphinx's LaTeX: a near-white line under a space of code is no drawn
#: underscore; running heads and feet found by their place on the page, not by reading order,
#: and a foot parted in two left out whole; "(continues on next page)"-style marks left out; a
#: code line wrapped to fit ("␣", "˓→") read as one; a title set flush right above short lines
#: read before them (no columns that do not stand side by side); a row begun by a raised mark
#: keeps the letters on its baseline (inline code in a smaller face stays in its sentence); a
#: page's footnotes written after the sentence its page break cuts, not inside it; one or two
#: typewriter cells of space inside inline code no column gutter. HTML: a tab panel hidden until
#: its tab is chosen (sphinx-tabs, Docusaurus) is read, after its button tab's label. PDF: the
#: private-use codes of Symbol and Wingdings fonts read as what they show (Word's and
#: LibreOffice's list bullets "•", "±", "°", "∑" of Symbol-font math).
#: 14: PDF: a chapter's label set on its own line(s) over the title (LaTeX's "Chapter 1",
#: "Appendix A"; Sphinx's "CHAPTER" / "ONE") starts that chapter's heading, with or without an
#: outline: it was the last line of the section before, or a heading of its own.
#: 15: PDF: a float (a table or figure with its caption) set at the top or foot of a page or
#: column between the two halves of a sentence is read after the paragraph that sentence ends,
#: its lines keeping their own page; a sentence cut by a column break is one paragraph.
#: 16: PDF: a front matter's running head with a roman page number ("iv CONTENTS" on the
#: blank page a two-sided book leaves) is left out, as arabic-numbered ones were.
#: 17: PDF: a loose line of a column beside the next column's text on the same row (LaTeX's
#: columns stand 10 pt apart, about two and a half stretched spaces) is no justified line
#: where the page's other rows leave that strip free: the columns no longer fall apart there.
#: 18: PDF: the float check looks past a running head or a column's footnotes to the line that
#: leaves the sentence open, and a caption runs on over a paragraph break only after a hyphen
#: (a table row without a sentence end is no caption line).
#: 19: PDF: a spacing accent drawn over or under a letter (TeX's OT1 fonts have no accented
#: letters: "Poincar´e", "Cˇ ech") is read as part of it ("Poincaré", "Čech").
#: 20: PDF: a footnote's mark that a page-wide row took into the other column's line at its
#: height is its footnote's again (it was a paragraph of its own: "∗"), and a mark at up to
#: 0.85 of its text's size is a mark; a line set mostly in a smaller typewriter face goes on
#: with its paragraph where the sentence runs into it and it holds letters of its size.
#: 21: PDF: a row centred over a two-column page's gutter, clear of it and of the columns' outer
#: edges (two authors' names side by side), above the columns is read with the title block,
#: not as the columns' first row (the second name was read atop the right column).
#: 22: PDF: OT1's "ł" (a stroke glyph, which maps to a space, drawn over "l") is read "ł", not
#: "Micha l".
#: 23: Word: a paragraph in LibreOffice's title style ("Heading", as a converted .doc's Title
#: comes out) is the document's title heading, not body text.
#: 24: PDF: a line of a displayed formula (a relation or operator of mathematics and no word of
#: four letters, or only one- and two-letter names) is never a heading by typography.
#: 25: PDF: a line that opens with a bullet or a dash (a list item; a slide's bullets are set as
#: large as headings) is never a heading by typography.
#: 26: LaTeX: sections inside an environment that wraps the body (``CJK*``, ``multicols``) are
#: headings, and such an environment's arguments are no text.
#: 27: USPTO patents in ICE XML (``us-patent-grant``, ``us-patent-application``) are read by
#: ``patent.py`` (title, parties, abstract, the description's headings, claims), not as
#: generic XML's element paths.
#: 28: a Word document without heading styles gets the headings its author set by hand:
#: short paragraphs in larger, bold or capital type followed by body text
#: (``word.typographic_headings``).
#: 29: code keeps its lines and indentation (``TextLayer.preformatted``) in DocBook listings,
#: JATS ``preformat``/``code``, Org and AsciiDoc literal blocks (Org's ``: `` lines and
#: AsciiDoc's indented paragraphs, read as prose before, among them) and MediaWiki code;
#: LaTeX's code environments (``verbatim``, ``lstlisting``, ``minted``, ``Verbatim``) are read
#: as written (a ``verbatim``'s text was lost) and a ``comment`` environment is left out. The first
#: version with the DocBook, FictionBook and MediaWiki readers (such files read as generic XML
#: or plain text under 28). And: a MediaWiki ``<ref>`` note is read in brackets (left out
#: before); Org footnotes read "[1]" (were "[fn:1]") and raw HTML blocks as their text; a LaTeX
#: ``\def`` in the body is no text; AsciiDoc ordered items are numbered (all read "1.") and
#: ``latexmath:[…]`` formulas read as their source.
#: 30: Unix mailboxes are read message by message (``mbox``): a mailbox behind ``.txt`` or
#: without an extension (a list archive, Thunderbird's ``Inbox``) was plain text; a message
#: with a header the e-mail library cannot parse (an address group with a comment) is read with
#: that header as written (it was refused whole). New formats, skipped before: SVG drawings
#: (``svg``), saved web pages (``mhtml``; Word's behind ``.doc`` went to LibreOffice), logs,
#: calendars, address cards, configuration files, patches, R Markdown and Quarto, 15 more
#: programming languages; 7-Zip and RAR archives and zstd-compressed files (``libarchive_reader``);
#: Maildir message files (their suffix a host name and flags) and Apple Mail's ``.emlx``; Excel
#: binary workbooks, Visio drawings, Publisher documents and OpenDocument drawings (LibreOffice:
#: ``.xlsb`` to ``.xlsx``, the others to PDF); an ``.xlsb`` was read as an ``.xlsx`` and failed.
#: Apple iWork, OpenOffice.org 1, StarOffice, Works, WordPerfect and Lotus 1-2-3 files
#: (LibreOffice, to OOXML).
#: 31: CJK text PDFium dropped for want of a font (a PDF that does not embed it, a machine
#: that has none covering the script: ``pdf_fonts``) is counted, named in a warning and in the
#: reading-quality score (``unset_glyphs``), and a page of nothing else fails with that reason.
#: Whether the machine has such fonts is part of the parse fingerprint (``Runtime``). PDF text
#: in Chinese and Japanese gets no space between two of its characters where the page leaves
#: only tracking (a justified line's spread, glyphs set one by one: "道 路 交 通 法" was read so),
#: a drawn space or a gap of half an em still one; a ruled table on a page turned for landscape
#: (``/Rotate``) is read across the page as shown (its rows came out as columns); a one-page
#: document's only line is no running head, though it ends in a number.
#: 32: letter-spaced PDF type (tracking, ``Tc``: "I N S T A L L A T I O N" in designed
#: headings) reads as words; a CJK PDF that pdfminer cannot read keeps PDFium's text where
#: no CJK font is installed (it failed whole).
#: 33: a space PDFium puts at a ``TJ`` adjustment between two CJK characters (how Word and
#: InDesign justify a Chinese or Japanese line) is no longer taken for a space the page draws:
#: such a line read with a space between every two characters. Vertical writing on a page
#: written across (a label, a form's header cell) reads down its columns, not one character per
#: line; a table cell's or a heading's Chinese or Japanese runs on where it wrapped, no space.
#: 34: an HTML table's merged cells (``rowspan``, ``colspan``) repeat their text in every cell
#: they span, as Word, PowerPoint, spreadsheet, JATS and wiki tables already did: a row under a
#: cell spanning down from above lost a column and stood under the wrong headers; a pivot
#: table's group row, whose cells all span into the next row, is no row of its own.
#: 35: Word and PowerPoint equations side by side in one paragraph are set apart by a space
#: ("a=b c=d e=f"; they read "a=bc=de=f").
#: 36: a PDF table ruled across and between its columns but open at its left and right (no
#: border there) is read as a table: its first and last columns had no cells, and their text
#: ran on below the table as loose lines (``pdf_layout._open_sides``).
#: 37: a PDF table ruled across only (Word's and LaTeX's plainer styles), each row between two
#: rules, is read as a table, its columns at the gutters its rows leave, its header the line
#: just above the first rule (``pdf_layout._gutter_rules``); it was read as lines.
#: 38: LaTeX tables (``tabular`` and its kin, ``longtable``, AASTeX's ``deluxetable``) are
#: tables, with their spanning cells repeated and a header of the rows above the first full
#: rule (``latex_tables``): they were paragraphs of run-together cells. The words of
#: ``\mbox``, ``\textsf``, ``\textup`` were dropped and a ``\parbox``'s width written as
#: text; a macro defined with ``\xspace`` keeps the space after it ("Mistral 7Bwith"), and
#: definitions whose body holds a group (``\textsc{Foo}\xspace``) are read.
#: 39: an HTML ``<table>`` in Markdown (converters' and OCR models' output, READMEs) is a table
#: section, as a pipe table is: its rows, a header of ``<th>`` rows or ``<thead>``, each row
#: embedded as ``| a | b |`` with merged cells repeated (``markdown_html_tables``); it was
#: text with every cell on a line of its own.
#: 40: a ruled PDF table is read as the grid its rules draw: a merged cell stands in every row
#: it spans down and, in the header, in every column it spans across (``_grid_rows``); rows
#: were the cells whose tops lay on them, so the row under a merged cell stood a column to the
#: left. Its header is the rows its first cells span (two for a grouped header); a column
#: closed by ``_open_sides`` wins over text read beside the rules where both hold as much.
#: 41: a Word or HTML table of one row and one cell is a frame (a boxed note, a page laid out
#: in a table), read as the content it holds: lists as lists, a table inside it as a table;
#: it was one cell with all of it on one line ("Tab1, Tab2, Tab3; A, B, C").
#: 42: a LaTeX citation or cross-reference reads as its keys ("[vaswani2017attention]", "Table
#: [tab:results]"), as docling writes them; pylatexenc wrote "<cit.>" and "<ref>".
#: 43: HTML text that is only no-break spaces (Word's and EDGAR's spacer ``<p>&nbsp;</p>``, a
#: blank cell, the ``&nbsp;`` between two links) shows as space: it was a block or a cell
#: holding U+00A0. An HTML table's columns blank in every row (spacer columns) are left out.
#: New formats, skipped or read as generic XML before: Box Notes (``boxnote``), XBRL
#: instances (``xbrl``: text blocks as HTML, facts as a table; they were element paths with
#: their escaped HTML), USPTO patents of 2001-2004 in XML (``patent_early_xml``) and of
#: 1976-2001 in APS text (``patent_aps``), read as the ICE ones are; ISO 8879's Greek entities
#: (``&agr;``, ``&mgr;``) in any XML read as their letters. PDF headings from typography:
#: three or more lines of one heading style on a page with no body text between them (a
#: syntax diagram's clauses between their call-outs, a cover's bullets, a form's labels, bold
#: paragraphs) are no headings, numbered ones excepted; a numbered line ("5. DISCUSSION")
#: under a heading of its style is a heading of its own, not the first's wrap.
#: 44: PDF pages of three text columns or more (a newsletter's, the Federal Register's, the
#: IRS's instructions) and slides of three text boxes side by side read column by column;
#: they were read across, a line of each column in turn: a column gutter needed column text
#: on both sides, and two columns together are none (``pdf_layout._Run._split_of_columns``).
#: A narrow justified column's stretched spaces, wider than the row's usual space, no longer
#: cut its lines into words (``_evenly_stretched``). A bold (italic) line that wraps into a line
#: opening in that face (a run-in head over two lines), and a ragged line cut by a column break
#: inside a sentence, no longer part a paragraph. Heading styles seen on the first page only and
#: larger than any later one (a cover's) share level 1: the body's headings were pushed to 6.
#: 45: PDF headings found by typography (no outline) nest by their section numbers where they
#: number a hierarchy (``1``, ``1.1``, ``1.1.2``; a chapter label's ``CHAPTER ONE``; an
#: appendix beside the chapters): ranks of type sizes made siblings of a chapter and its
#: sections set in one style (Sphinx's), or of sections whose measured sizes differ
#: (``pdf._levels_by_numbering``).
#: 46: PDF fonts whose descriptor states no ascent or descent (LibreOffice 7.4 writes 0 and 0)
#: are measured by their own program's metrics, where PDFium invented them from two arbitrary
#: glyphs of the subset: a sans-serif heading over a serif body measured smaller than the body
#: and was not found (``pdf_font_metrics``). A run's column of lines that all open with a
#: capital is no column of text (a table's names or labels): three table columns were read as
#: three text columns once measured so (``pdf_layout._Run._split_of_columns``). A space glyph
#: drawn after a mark placed back over its letter parts words (``pdf_layout._text``).
#: 47: a spreadsheet's integer in a percent format is shown as a percentage, as its fractions
#: were (1 in a "0%" cell reads "100%", where it read "1"; 10 of 374 workbooks of Apache POI's
#: and docling's tests change, each in such cells only). PowerPoint shows and templates
#: (``.ppsx``, ``.potx``, macro-enabled or not) are read as the presentations they hold, where
#: they failed.
#: 48: a saved web page is read without the furniture around its article where that is sure
#: (``html_furniture``: menus, teasers, share links, ad slots and footers in plain ``<div>``s,
#: in its body or its ``<main>``); a ``<main>`` that shows nothing (an ad slot's scripts) gives
#: way to the body, where the page read as empty. Documents that are not such pages read as
#: before (226 HTML documents compared: the fixtures, the corpus, docling's tests but its
#: Wikipedia page, whose categories go, LibreOffice's exports, Markdown rendered). A list item
#: that shows nothing before its sublist (or at all: an icon-only share link) gets no marker,
#: where it wrote a line of a bare "-".
#: 49: web pages printed to PDF by a browser (Chrome's Skia backend) read as the page: its
#: running header and footer (date, title; address, "2/63") left out though set close to the
#: text, on one page too (``pdf._mark_furniture``); list bullets drawn as dots read as "•"
#: (``pdf_layout._drawn_bullets``); headings set in a code face (``## `rate()` ``) found
#: (``pdf._code_face_heading``); a line-end hyphen kept and joined without a space ("right-hand",
#: ``--storage.tsdb.path``), a browser never hyphenating. Any PDF: a bold or italic phrase
#: that begins inside a line and wraps onto a line set in that face throughout no longer
#: parts the paragraph; a first word's face is judged by its letters ("teams." after a bold
#: run); a heading wrapped after a compound's hyphen is joined without a space; an outline is
#: read to 64 levels, where entries below 8 were skipped; a code listing's lines keep their
#: indentation, measured in the typewriter face's character widths (``pdf._code_indents``:
#: YAML and Python mean it), txfonts' bold typewriter and symbol fonts (a Sphinx listing's
#: keywords and quotes) known as fixed-pitch, and a listing's line in another face (an italic
#: comment, a bold keyword) no longer parts it into paragraphs; a bulleted item indented under
#: another (a sublist) goes on in its list, where the indent read as a new paragraph. Of 157
#: PDFs not printed by a browser (the corpus, docling's tests, the three manual sets, the
#: fixtures, LibreOffice's exports of the corpus), 16 change, their headings not: 10 by
#: indentation only, 6 by breaks inside a sentence or a listing gone.
#: 50: a saved web page's readers' comments (the blocks an ``id`` or class names so: WordPress's
#: ``comments-area``, Disqus's thread) are left out once its article is found for sure, and
#: never taken for the article (``html_furniture.comment_sections``); readability's and Zyte's
#: test pages: 12 and 28 pages read less furniture, none loses a word of its article. An
#: e-mail's plain-text body: each message a reply or forward quotes (under Outlook's "From: /
#: Sent: / To: / Subject:" block, or an "On ... wrote:" line over ``>`` lines) is a section of
#: its own, headed by that line (``mail.quoted_history``), where it ran on in the reply's. Also
#: read now, where they failed or were skipped (no output of a file read before changes):
#: pre-97 word processors and spreadsheets through LibreOffice, Kindle and Palm books, JPEG
#: 2000 scans, a workbook with a damaged chart part, a PDF with a page that does not load.
#: 51: a tagged PDF's headings are the ones its structure tree declares (``H1``-``H6``, ``H``
#: under nested ``Sect``, ``Title``), matched to their lines as an outline's are, where they
#: find more lines than its outline (``pdf_tags``): browsers, Word and LibreOffice tag
#: headings. An outline's title cut short by its producer (Word keeps 60 characters) heads the
#: line it starts, and a declared title set in bold or italic down to 0.85 of the body's size
#: is found (Word's subheadings). Of 199 PDFs (the corpus, docling's tests, the four manual
#: sets, the fixtures, LibreOffice's tagged exports of the corpus, four tagged Govdocs1
#: reports, py-pdf's samples), 6 change, in their headings only: Chrome's prints of the 18F
#: handbook and Prometheus's documentation read every heading of their HTML twins at its level.
#: With the tags, a heading set by hand in a tagged heading's type is one at its level, and
#: what a tagged PDF marks ``/Artifact`` (running heads and feet, page numbers) is left out
#: (a page of artifacts alone is no scan to OCR). HTML's inline SVG drawings give their
#: labels (``<text>``, a line each; ``<tspan>`` pieces placed at one ``y`` on one line), where
#: they were skipped; an EPUB's spine page drawn as SVG is read (a fixed-layout book's pages),
#: where it was skipped, and a book whose pages are pictures is read by OCR, where it had no
#: text; an SVG file's pieces are no longer parted by the source's indentation. Readability's
#: and Zyte's 311 test pages read as before. MDX files (``.mdx``) are read, where skipped.
#: 52: a tagged PDF without a ``Title`` tag has the title an outline would be given: the first
#: page's first line in large type before the first tagged heading (``pdf._under_title``).
#: Tags that start at ``H2`` keep their levels under it; a line in its look on a later page is
#: a heading at level 1 (a part's title), on the cover page it is not. Of 203 PDFs, 2 change
#: (Govdocs1 reports that tag one heading), in their headings only. Also read now, where it
#: failed: a page whose media box has no area (as US Letter) or whose crop box shows nothing
#: of it (by its media box), as pdf.js shows them; one of 1,200 PDFs swept has such pages. A
#: page too large to render for OCR at the set dpi within 40 million pixels (a poster, a map)
#: is read at the resolution that fits, where it ran out of memory or time.
PARSE_VERSION = "52"
