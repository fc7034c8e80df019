"""components.display_tables: one table, three renderings (Markdown, HTML, console text), pinned character by character."""

from __future__ import annotations

from components.display_tables import Table, html_table, markdown_table, text_table

TABLE = Table(["target", "runs", "note"], [["cpu", "3", "a <b> & 'c'"], ["tpu-v5e", "12", "x | y"]],
              align=["left", "right"])


def test_markdown_marks_right_aligned_columns_and_escapes_the_cell_separator() -> None:
    assert markdown_table(TABLE) == (
        "| target | runs | note |\n"
        "|---|---:|---|\n"
        "| cpu | 3 | a <b> & 'c' |\n"
        "| tpu-v5e | 12 | x \\| y |"
    )


def test_markdown_without_alignment_uses_the_default_separator() -> None:
    assert markdown_table(Table(["a", "b"], [])) == "| a | b |\n|---|---|"


def test_html_escapes_headers_and_cells_and_marks_prose_columns() -> None:
    table = Table(["<name>", "value"], [["a&b", "it's"]])
    assert html_table(table, text_columns={1}) == (
        "<table><thead><tr><th>&lt;name&gt;</th><th>value</th></tr></thead>"
        "<tbody><tr><td>a&amp;b</td><td class='text'>it&#x27;s</td></tr></tbody></table>"
    )


def test_text_pads_columns_to_the_widest_cell_and_strips_trailing_blanks() -> None:
    assert text_table(TABLE, indent="  ").splitlines() == [
        "  target   runs  note",
        "  cpu         3  a <b> & 'c'",
        "  tpu-v5e    12  x | y",
    ]


def test_text_with_only_a_header() -> None:
    assert text_table(Table(["TASK", "STATE"], [])) == "TASK  STATE"
