"""The manifest as Markdown for the Vertex UI and local runs: splits, labels, blocks, features, input, dead letters."""

from __future__ import annotations

from components.contracts.manifest import Manifest
from components.display_tables import Align, Table, markdown_table


def manifest_markdown(manifest: Manifest) -> str:
    lines = ["# Preprocess", "", "## Splits", ""]
    lines.append(markdown_table(Table(
        ["split", "examples"] + [f"{t} rate" for t in manifest.tasks],
        [[split, str(info.examples)] + [f"{info.label_rates.get(t, 0.0):.4f}" for t in manifest.tasks]
         for split, info in manifest.splits.items()],
        align=_name_then_figures(2 + len(manifest.tasks)))))
    if manifest.block_layout is not None:
        lines += ["", f"## Blocks ({manifest.block_layout.block_examples} examples each, "
                  f"{manifest.block_layout.record_bytes:,} bytes a record)", ""]
        lines.append(markdown_table(Table(
            ["split", "files", "blocks", "examples", "partial last blocks (rows)"],
            [[split, str(len(info.blocks.files)), str(info.blocks.blocks), str(info.blocks.examples),
              ", ".join(str(rows) for rows in info.blocks.partial_blocks.values()) or "none"]
             for split, info in manifest.splits.items() if info.blocks is not None],
            align=["left", "right", "right", "right", "left"])))
    lines += ["", "## Features", ""]
    lines.append(markdown_table(Table(
        ["feature", "kind", "dtype", "length", "table rows", "missing rate"],
        [[feature.name, feature.kind, feature.dtype, str(feature.length),
          "" if feature.table_rows is None else str(feature.table_rows),
          "" if feature.missing_rate is None else f"{feature.missing_rate:.4f}"]
         for feature in manifest.features],
        align=["left", "left", "left", "right", "right", "right"])))
    if manifest.input:
        lines += ["", "## Input (every byte read: framing + blank lines + parsed + dead letters)", ""]
        lines.append(markdown_table(Table(
            ["stream", "files", "bytes", "framing bytes", "blank lines (bytes)", "records", "parsed (bytes)",
             "dead letters (bytes)"],
            [[stream, f"{account.files:,}", f"{account.bytes:,}", f"{account.framing_bytes:,}",
              f"{account.blank_lines:,} ({account.blank_bytes:,})", f"{account.records:,}",
              f"{account.parsed:,} ({account.parsed_bytes:,})",
              f"{account.dead_letters:,} ({account.dead_letter_bytes:,})"]
             for stream, account in manifest.input.items()],
            align=_name_then_figures(8))))
    lines += ["", "## Counts", ""]
    lines.append(markdown_table(Table(["count", "value"],
                                      [[name, str(value)] for name, value in sorted(manifest.counts.items())],
                                      align=["left", "right"])))
    per_stream = ", ".join(f"{stream} {share:.2%}" for stream, share in manifest.invalid_fraction_by_stream.items())
    lines += ["", f"## Dead letters ({manifest.invalid_fraction:.2%} of records read"
              + (f"; {per_stream}" if per_stream else "") + ")", ""]
    if manifest.dead_letter:
        lines.append(markdown_table(Table(
            ["stream:reason", "records"],
            [[reason, str(n)] for reason, n in sorted(manifest.dead_letter.items(), key=lambda kv: (-kv[1], kv[0]))],
            align=["left", "right"])))
    else:
        lines.append("none")
    return "\n".join(lines) + "\n"


def _name_then_figures(columns: int) -> list[Align]:
    """A table whose first column names the row (left-aligned) and whose other columns are figures (right)."""
    return ["left" if column == 0 else "right" for column in range(columns)]
