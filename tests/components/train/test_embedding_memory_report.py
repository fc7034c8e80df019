"""Table memory travels from the trained model into the RunSummary and the report's per-target table."""

import importlib.util
from pathlib import Path

from components.contracts.run_summary import EmbeddingTableMemory
from components.report.aggregation import summarize
from components.report.report_tables import per_target_table

_spec = importlib.util.spec_from_file_location(
    "report_fixtures", Path(__file__).resolve().parents[1] / "report" / "test_report.py"
)
report_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report_fixtures)


def test_the_report_shows_each_targets_table_and_slot_memory():
    table = EmbeddingTableMemory(name="tables_dim8", tables=["user_id_table"], rows=2**20, embedding_dim=8,
                                 parameter_bytes=2**20 * 8 * 4, optimizer_slot_bytes=2**20 * 4)
    runs = [report_fixtures.run("cpu", i, 0.35, 1000.0).model_copy(update={"embedding_tables": [table]})
            for i in range(2)]
    runs += [report_fixtures.run("cpu-big", i, 0.35, 2000.0) for i in range(2)]  # recorded no tables
    summary = summarize(report_fixtures.config(), report_fixtures.manifest(), runs)
    assert summary.targets["cpu"].embedding_memory_mib == 36.0  # 32 MiB table + 4 MiB row-wise slots
    rendered = per_target_table(summary)
    column = rendered.header.index("tables + slots MiB")
    assert [row[column] for row in rendered.rows] == ["36.0", "—"]


def test_a_training_run_records_its_table_and_slot_bytes(examples_dir, tmp_path):
    from config_fixture import small_config

    from components.train.training_run import train

    summary = train(small_config(epochs=1, embedding_optimizer="rowwise_adagrad"), "cpu", 0, str(examples_dir),
                    str(tmp_path / "model"))
    (table,) = summary.embedding_tables
    assert table.rows == 50 + 20 + 12 and table.embedding_dim == 8  # the fixture's three tables, stacked
    assert table.parameter_bytes == table.rows * 8 * 4
    assert table.optimizer_slot_bytes == table.rows * 4
