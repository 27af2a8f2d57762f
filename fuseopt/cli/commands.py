"""Every command and the module that defines it; a module is imported when its command runs."""

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
