"""The records one step hands to another, in one place that the producing and the consuming steps both import:
the manifest (preprocess → train, report, promotion), the run summary with its time split and calibrators
(train → report), the benchmark summary with its sample statistics and scaling sweeps (report → promotion) and the
promotion decision (promotion → reports, `runs show`). Each derives from `base.Contract`; this package imports
nothing from a step package (`tests/test_import_graph.py`).
"""
