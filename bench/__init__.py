"""Benchmarks of agentcli's quality bars (SPEC §10). Run them all with `python -m bench.run`."""
