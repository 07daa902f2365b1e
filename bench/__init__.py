"""Sediment's benchmark suite: ``python -m bench`` measures and writes docs/benchmarks.md.

Benchmarks are not tests: nothing here asserts, every number goes into the Markdown report.
Each module has one job: synthetic data, one family of measurements, the machine
description, or the report.
"""
