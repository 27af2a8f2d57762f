"""`fuseopt ci`: every check on a corpus of graph files, golden-plan baselines, reports for CI systems.

`discover` finds the graph files, `checks` runs the checks on one graph (a picklable job, so the
same function runs inline, on a process pool or on Ray: `executor`), `baseline` compares plans with
committed golden plans, and `junit`, `sarif`, `github`, `text` render one `CiReport`.
"""
