import json
import os

import pytest

from foundation.atomic_write import write_json_atomically, write_text_atomically


def test_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "run.json"
    write_json_atomically(path, {"status": "running"})
    write_json_atomically(path, {"status": "succeeded"}, indent=1)
    assert json.loads(path.read_text()) == {"status": "succeeded"}
    assert path.read_text() == json.dumps({"status": "succeeded"}, indent=1)
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_failed_write_keeps_the_old_content_and_removes_its_temporary(tmp_path, monkeypatch):
    path = tmp_path / "default.json"
    write_text_atomically(path, "old")

    def refuse(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomically(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["default.json"]
