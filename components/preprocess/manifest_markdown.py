"""The manifest as Markdown for the Vertex UI and local runs: splits, labels, blocks, features, input, dead letters."""

from __future__ import annotations

from components.preprocess.manifest import Manifest


def manifest_markdown(manifest: Manifest) -> str:
    lines = ["# Preprocess", "", "## Splits", ""]
    lines += ["| split | examples | " + " | ".join(f"{t} rate" for t in manifest.tasks) + " |"]
    lines += ["|---|---:|" + "---:|" * len(manifest.tasks)]
    for split, info in manifest.splits.items():
        rates = " | ".join(f"{info.label_rates.get(t, 0.0):.4f}" for t in manifest.tasks)
        lines.append(f"| {split} | {info.examples} | {rates} |")
    if manifest.block_layout is not None:
        lines += ["", f"## Blocks ({manifest.block_layout.block_examples} examples each, "
                  f"{manifest.block_layout.record_bytes:,} bytes a record)", "",
                  "| split | files | blocks | examples | partial last blocks (rows) |", "|---|---:|---:|---:|---|"]
        for split, info in manifest.splits.items():
            if info.blocks is not None:
                partial = ", ".join(str(rows) for rows in info.blocks.partial_blocks.values()) or "none"
                lines.append(f"| {split} | {len(info.blocks.files)} | {info.blocks.blocks} | {info.blocks.examples} "
                             f"| {partial} |")
    lines += ["", "## Features", "", "| feature | kind | dtype | length | vocabulary size | missing rate |",
              "|---|---|---|---:|---:|---:|"]
    for feature in manifest.features:
        size = "" if feature.vocabulary_size is None else str(feature.vocabulary_size)
        missing = "" if feature.missing_rate is None else f"{feature.missing_rate:.4f}"
        lines.append(f"| {feature.name} | {feature.kind} | {feature.dtype} | {feature.length} | {size} | {missing} |")
    if manifest.input:
        lines += ["", "## Input (every byte read: framing + blank lines + parsed + dead letters)", "",
                  "| stream | files | bytes | framing bytes | blank lines (bytes) | records | parsed (bytes) "
                  "| dead letters (bytes) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for stream, account in manifest.input.items():
            lines.append(f"| {stream} | {account.files:,} | {account.bytes:,} | {account.framing_bytes:,} | "
                         f"{account.blank_lines:,} ({account.blank_bytes:,}) | {account.records:,} | "
                         f"{account.parsed:,} ({account.parsed_bytes:,}) | "
                         f"{account.dead_letters:,} ({account.dead_letter_bytes:,}) |")
    lines += ["", "## Counts", "", "| count | value |", "|---|---:|"]
    lines += [f"| {name} | {value} |" for name, value in sorted(manifest.counts.items())]
    per_stream = ", ".join(f"{stream} {share:.2%}" for stream, share in manifest.invalid_fraction_by_stream.items())
    lines += ["", f"## Dead letters ({manifest.invalid_fraction:.2%} of records read"
              + (f"; {per_stream}" if per_stream else "") + ")", ""]
    if manifest.dead_letter:
        lines += ["| stream:reason | records |", "|---|---:|"]
        lines += [f"| {reason} | {n} |" for reason, n in sorted(manifest.dead_letter.items(), key=lambda kv: -kv[1])]
    else:
        lines.append("none")
    return "\n".join(lines) + "\n"
