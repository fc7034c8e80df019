"""A table for people (a header, rows of text, an alignment per column) rendered as Markdown, HTML or console text.

Every table adrank writes goes through here: the report's sections (HTML and Markdown), the promotion section,
the replay report, the manifest's Markdown, `adrank runs`, `adrank vertex runs` and `adrank schedule list`. The
cells are already formatted text; this module only decides how a table is laid out and escaped:

    Markdown  `| a | b |` lines; a right-aligned column's separator is `---:`; `|` inside a cell is escaped
    HTML      `<table><thead>…</thead><tbody>…</tbody></table>`, every header and cell HTML-escaped
    text      columns padded to their widest cell and joined by two spaces, trailing blanks stripped
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import AbstractSet, Literal

Align = Literal["left", "right"]


@dataclass(frozen=True)
class Table:
    """`header` names the columns; each row has one cell per column; `align` gives the first columns' alignment
    (a column past its end is left-aligned)."""

    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    align: Sequence[Align] = field(default=())

    def alignment(self, column: int) -> Align:
        return self.align[column] if column < len(self.align) else "left"


def markdown_table(table: Table) -> str:
    """GitHub-flavoured Markdown: a left-aligned column's separator is `---` (the renderer's default), a
    right-aligned one's `---:`."""
    separators = ["---:" if table.alignment(i) == "right" else "---" for i in range(len(table.header))]
    lines = [_markdown_row(table.header), "|" + "|".join(separators) + "|"]
    lines += [_markdown_row(row) for row in table.rows]
    return "\n".join(lines)


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def html_table(table: Table, text_columns: AbstractSet[int] = frozenset()) -> str:
    """The table as HTML, every header and cell escaped. A column in `text_columns` holds prose: its cells get
    `class='text'` (the report's style sheet wraps and left-aligns them)."""
    head = "".join(f"<th>{_escape(h)}</th>" for h in table.header)
    rows = "".join(
        "<tr>" + "".join(
            f"<td class='text'>{_escape(cell)}</td>" if i in text_columns else f"<td>{_escape(cell)}</td>"
            for i, cell in enumerate(row)
        ) + "</tr>"
        for row in table.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _escape(text: str) -> str:
    return html.escape(text, quote=True)


def text_table(table: Table, indent: str = "") -> str:
    """Console columns: the header, then the rows, each column padded to its widest cell (left- or
    right-justified per `align`), two spaces between columns, `indent` before each line, no trailing blanks."""
    lines = [list(table.header)] + [list(row) for row in table.rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(table.header))]
    return "\n".join(
        indent + "  ".join(
            cell.rjust(width) if table.alignment(i) == "right" else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths))
        ).rstrip()
        for line in lines
    )
