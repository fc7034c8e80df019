"""Whether a YAML text repeats a key in one mapping: PyYAML keeps the last value silently, so a second
`training:` block would replace the whole first one. Checked on the composed node tree (before any value is
built), so the error can name the key's dotted path and the lines of both occurrences."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

MERGE_KEY_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class DuplicateKey:
    """`path` (dotted, list items by index) is written at `first_line` and again at `second_line` (1-based)."""

    path: str
    first_line: int
    second_line: int

    def describe(self) -> str:
        return (f"duplicate key '{self.path}' at line {self.second_line} (first at line {self.first_line}): YAML "
                "would keep only the last one; merge the two or delete one")


def duplicate_keys(text: str) -> list[DuplicateKey]:
    """Every repeated key of every mapping in the (first) YAML document of `text`, in document order.
    Raises `yaml.YAMLError` for text that is not YAML."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    found: list[DuplicateKey] = []
    if root is not None:
        _walk(root, "", found, set())
    return found


def _walk(node: yaml.Node, path: str, found: list[DuplicateKey], seen: set[int]) -> None:
    if id(node) in seen:  # an alias points at a node already checked (and may point back at its parent)
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_lines: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            if key.tag == MERGE_KEY_TAG or not isinstance(key, yaml.ScalarNode):
                _walk(value, path, found, seen)
                continue
            child = f"{path}.{key.value}" if path else str(key.value)
            line = key.start_mark.line + 1
            identity = (key.tag, key.value)
            if identity in first_lines:
                found.append(DuplicateKey(child, first_lines[identity], line))
            else:
                first_lines[identity] = line
            _walk(value, child, found, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, f"{path}.{index}" if path else str(index), found, seen)
