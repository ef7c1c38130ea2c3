"""reme-es benchmarks, one subpackage per question (bench/README.md maps each question to its script). Scripts run
as modules from the checkout root: `.venv/bin/python -m bench.quality.locomo --help`."""
