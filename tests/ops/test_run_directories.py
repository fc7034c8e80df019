import datetime as dt
import re

import pytest

from ops.local_run.directories import RunDirectoryTaken, create_run_directory, stamped_run_id
from ops.local_run.replay import ReplayError, create_replay_dir


def test_a_default_id_is_the_utc_second_and_the_name():
    local = dt.datetime(2026, 1, 5, 10, 30, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert stamped_run_id("adrank-local", local) == "20260105-093000-adrank-local"


def test_same_second_directories_get_suffixes_and_a_chosen_id_must_be_free(tmp_path):
    first = create_run_directory(tmp_path, None, "cfg")
    second = create_run_directory(tmp_path, None, "cfg")
    assert re.fullmatch(r"\d{8}-\d{6}-cfg", first.name)
    assert second.name == f"{first.name}-2" or re.fullmatch(r"\d{8}-\d{6}-cfg", second.name)  # or a later second
    assert second != first
    assert create_run_directory(tmp_path, "mine", "cfg") == tmp_path / "mine"
    with pytest.raises(RunDirectoryTaken):
        create_run_directory(tmp_path, "mine", "cfg")


def test_a_replay_directory_is_named_by_the_same_rule(tmp_path):
    made = create_replay_dir(tmp_path, None, "daily")
    assert made.is_dir() and re.fullmatch(r"\d{8}-\d{6}-daily-replay", made.name)
    create_replay_dir(tmp_path, "series-1", "daily")
    with pytest.raises(ReplayError, match="--replay-id series-1: already taken"):
        create_replay_dir(tmp_path, "series-1", "daily")
