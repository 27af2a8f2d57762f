"""Every command, the module that defines it, and its line in `fuseopt --help`: a module is
imported when its command runs (so the group's help imports none of them, torch included)."""

COMMANDS: dict[str, str] = {
    "bench": "fuseopt.cli.bench_cmd",
    "capture": "fuseopt.cli.capture_cmd",
    "check-determinism": "fuseopt.cli.determinism_cmd",
    "ci": "fuseopt.cli.ci_cmd",
    "diff-jit-aot": "fuseopt.cli.diff_cmd",
    "explain": "fuseopt.cli.explain_cmd",
    "optimize": "fuseopt.cli.optimize_cmd",
    "reduce": "fuseopt.cli.reduce_cmd",
    "run": "fuseopt.cli.run_cmd",
    "schema": "fuseopt.cli.schema_cmd",
    "targets": "fuseopt.cli.targets_cmd",
    "validate": "fuseopt.cli.validate_cmd",
}

# Each command's short help (its `short_help`, and its line in the group's help)
SUMMARIES: dict[str, str] = {
    "bench": "Compile, check and time the plan's kernels beside eager and torch.compile.",
    "capture": "Capture a PyTorch function with torch.compile (Inductor) as a fuseopt graph.",
    "check-determinism": "Plan GRAPH under permutations and in fresh processes; exit 1 on a difference.",
    "ci": "Run the checks on every graph file under PATH.",
    "diff-jit-aot": "Plan GRAPH twice, as AOT compilation does, and compare the two plans.",
    "explain": "Say whether two nodes share a kernel; if not, the first failing condition and a fix.",
    "optimize": "Plan fusion and loop orders for GRAPH; print the plan, and write it with -o DIR.",
    "reduce": "Shrink GRAPH to a minimal graph on which PREDICATE still holds.",
    "run": "Run GRAPH on random inputs (the reference, or the generated kernels checked against it).",
    "schema": "Print the graph format's JSON Schema.",
    "targets": "List the GPU targets, their hardware facts and tuned constants.",
    "validate": "Validate graph files; exit 2 if any is invalid.",
}
