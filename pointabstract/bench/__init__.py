"""Benchmarks printed as tables (the ``pointabstract bench ...`` commands)."""
