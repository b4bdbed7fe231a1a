"""LaTeX tables are tables: rows, cells, spanning cells and headers as a reader sees them; and
the words of boxes and of ``\\xspace`` macros are kept."""

from __future__ import annotations

from agrag_pipeline.models import Section
from agrag_pipeline_tests.parsing.parsed_support import parse_checked


def _tables(source: bytes) -> tuple[str, list[Section]]:
    parsed = parse_checked(source, "paper/results.tex")
    return parsed.text_layer, [s for s in parsed.sections if s.table_rows]


def _rows(text: str, table: Section) -> tuple[str, list[str]]:
    assert table.table_header is not None
    header = text[table.table_header.start : table.table_header.end]
    return header, [text[r.start : r.end] for r in table.table_rows]


def test_a_booktabs_table_reads_with_its_two_row_header_and_spanning_cells() -> None:
    # As ML papers write results: a float with its caption, scaled by \resizebox, booktabs
    # rules with a trimmed \cmidrule under a \multicolumn header, \multirow model names. It
    # was one paragraph, "Model Small MoE Large MoE Baseline w/ MTP ...", no cell apart.
    source = rb"""\documentclass{article}
\usepackage{booktabs,multirow,graphicx}
\begin{document}
\section{Results}
\begin{table}[t]
\centering
\caption{Ablation of the multi-token prediction objective.}
\label{tab:mtp}
\resizebox{\linewidth}{!}{
\begin{tabular}{@{}l c | cc@{}}
\toprule[1.2pt]
\multirow{2}{*}{\textbf{Benchmark}} & \multirow{2}{*}{\# Shots} &
  \multicolumn{2}{c}{\textbf{Small MoE}} \\
\cmidrule(lr){3-4}
 & & Baseline & w/ MTP \\ \midrule
\multirow{2}{*}{MMLU (EM)} & 5-shot & 50.0 & \textbf{53.3} \\
 & 0-shot & 41.2 & 44.0 \\[2pt]
\rowcolor{gray!20} GSM8K (EM) & 8-shot & 25.4 & 31.4 \\
\bottomrule
\end{tabular}}
\end{table}
Text after the table.
\end{document}
"""
    text, (table,) = _tables(source)
    header, rows = _rows(text, table)
    assert header == (
        "| Benchmark | # Shots | Small MoE | Small MoE |\n"
        "| Benchmark | # Shots | Baseline | w/ MTP |\n| - | - | - | - |"
    )
    assert rows == [
        "| MMLU (EM) | 5-shot | 50.0 | 53.3 |",
        "| MMLU (EM) | 0-shot | 41.2 | 44.0 |",
        "| GSM8K (EM) | 8-shot | 25.4 | 31.4 |",
    ]
    assert "Ablation of the multi-token prediction objective.\n\n| Benchmark" in text
    assert text.endswith("| GSM8K (EM) | 8-shot | 25.4 | 31.4 |\n\nText after the table.")
    for residue in ("lr)", "3-4", "1.2pt", "gray", "!", "linewidth", "2pt"):
        assert residue not in text


def test_a_table_ruled_after_every_row_has_a_one_row_header_and_nested_cells_read_whole() -> None:
    source = rb"""\begin{document}
\begin{tabular}{|c|c|}
\hline
Model & \begin{tabular}[c]{@{}c@{}}Arena\\ ELO\end{tabular} \\ \hline
Mistral 7B & \makecell{1031 \\ (best)} \\ \hline
Vicuna 13B & 1041 \\ \hline
\end{tabular}
\end{document}
"""
    text, (table,) = _tables(source)
    header, rows = _rows(text, table)
    assert header == "| Model | Arena ELO |\n| - | - |"
    assert rows == ["| Mistral 7B | 1031 (best) |", "| Vicuna 13B | 1041 |"]


def test_a_longtable_has_one_header_and_leaves_out_its_repeated_head_and_foot() -> None:
    source = rb"""\begin{document}
\begin{longtable}{ll}
\caption{Options.}\\
\hline
Option & Meaning \\ \hline
\endfirsthead
\multicolumn{2}{l}{\emph{continued}} \\
Option & Meaning \\ \hline
\endhead
\hline \multicolumn{2}{r}{continued on the next page} \\
\endfoot
\hline
\endlastfoot
-v & verbose \\
-q & quiet \\
\end{longtable}
\end{document}
"""
    text, (table,) = _tables(source)
    header, rows = _rows(text, table)
    assert header == "| Option | Meaning |\n| - | - |"
    assert rows == ["| -v | verbose |", "| -q | quiet |"]
    assert text.startswith("Options.\n\n| Option")
    assert "continued" not in text


def test_words_in_boxes_are_kept_and_xspace_macros_keep_their_space() -> None:
    # pylatexenc writes no text for \mbox and \textsf, a \parbox's width as text, and a
    # macro eats the space after it, which \xspace gives back: "Mistral 7Bwith".
    source = rb"""\documentclass{article}
\def\mistral{Mistral~7B\xspace}
\newcommand{\sys}{\textsf{Graphite}\xspace}
\begin{document}
\mistral with \sys outperforms \mbox{state-of-the-art} models in \parbox[t]{3cm}{every
setting}, as \LaTeX{} typesets \mistral.
\end{document}
"""
    text = parse_checked(source, "paper/main.tex").text_layer
    assert text == (
        "Mistral 7B with Graphite outperforms state-of-the-art models in every setting, "
        "as LaTeX typesets Mistral 7B."
    )


def test_an_aastex_deluxetable_reads_with_its_head_caption_and_notes() -> None:
    source = rb"""\begin{document}
\begin{deluxetable}{l cc}[t!]
\tablecaption{Line fluxes. \label{tab:flux}}
\tablehead{\colhead{} & \multicolumn{2}{c}{RMSE} \\ \cmidrule(lr){2-3}
  \colhead{$k$} & \colhead{SFNet} & \colhead{PCA}}
\startdata
2 & $0.0858 \pm 0.0004$ & 0.1753 \\
8 & 0.0852 & \nodata \\
\enddata
\tablecomments{Lower is better.}
\end{deluxetable}
\end{document}
"""
    text, (table,) = _tables(source)
    header, rows = _rows(text, table)
    assert header == "|  | RMSE | RMSE |\n| $k$ | SFNet | PCA |\n| - | - | - |"
    assert rows == ["| 2 | $0.0858 \\pm 0.0004$ | 0.1753 |", "| 8 | 0.0852 |  |"]
    assert text.startswith("Line fluxes.\n\n|") and text.endswith("|\n\nLower is better.")


def test_a_table_of_huge_spans_is_read_within_bounds() -> None:
    row = rb"\multicolumn{1000}{c}{x} \\" + b"\n"
    source = rb"\begin{document}\begin{tabular}{c}" + b"\n" + row * 2_000 + rb"\end{tabular}"
    text, (table,) = _tables(source + rb"\end{document}")
    assert len(table.table_rows) == 1_999
    # The copies of spanning cells are bounded (table_grid.MAX_FILLED), not 2 million.
    assert text.count(" x ") <= 100_000 + 2_000


def test_citations_and_cross_references_read_as_their_keys() -> None:
    # pylatexenc writes "<cit.>" and "<ref>": nothing a reader can use, and tag-like.
    source = rb"""\begin{document}
Attention~\cite{vaswani2017attention,dao2022} wins (Table~\ref{tab:results},
Eq.~\eqref{eq:loss}; \citep[p.~3]{brown2020}).\nocite{*}
\end{document}
"""
    text = parse_checked(source, "paper/main.tex").text_layer
    assert text == (
        "Attention [vaswani2017attention, dao2022] wins (Table [tab:results], "
        "Eq. [eq:loss]; [brown2020])."
    )
