"""The sections of the run report, in order, with their headings and explanations: the HTML (`html.py`) and the
Markdown (`summary_markdown.py`) report both render this one list, each with its own markup for a section's body."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReportSection:
    """`key`: what a renderer draws the body with; `title`: the heading (None: no heading); `explanation`: the
    sentence under the heading that says how to read it."""

    key: str
    title: str | None
    explanation: str | None = None


REPORT_SECTIONS: tuple[ReportSection, ...] = (
    ReportSection("findings", None),
    ReportSection("targets", "Targets"),
    ReportSection("scaling", "Scaling",
                  "Each swept target (targets[].scale) at every point: the devices the runtime saw, steady examples/s, "
                  "speed-up and efficiency (examples/s over the device ratio × point 1's), cost per million examples "
                  "at the point's price, and log-loss against point 1 (Welch's t-test over runs)."),
    ReportSection("skipped_targets", "Skipped targets",
                  "Configured targets this DAG did not train on this backend or machine."),
    ReportSection("time_split", "Where the time went",
                  "Mean seconds per run in each phase, and its share of the run. examples/s counts the steady "
                  "training steps alone (input waits included; start-up, evaluation, checkpoints and export apart), as "
                  "published accelerator throughputs do. Tables: where the runtime says the embedding tables lived."),
    ReportSection("figures", "Figures"),
    ReportSection("statistics", "Log-loss statistics per task",
                  "Standard deviation over repeated identical runs (different seeds); 95% CI of the mean from "
                  "Student's t; the baseline comparison is Welch's t-test."),
    ReportSection("eval_curve", "Eval log-loss per epoch",
                  "Mean over each target's runs, measured after every epoch. A rise or a fall between two epochs "
                  "is advice only when it is significant run by run (paired over runs, 5%): the findings then say "
                  "fewer or more epochs (training.epochs); otherwise the difference is within run-to-run noise."),
    ReportSection("reliability", "Calibration: reliability per bin",
                  "Eval examples in bins of equal count by predicted probability, mean over each target's runs (the "
                  "reliability figure plots them); a calibrated model predicts each bin's observed rate."),
    ReportSection("every_run", "Every run", "Hardware as reported by the runtime of each run, not as requested."),
    ReportSection("dead_letters", "Dead-lettered log records"),
)
