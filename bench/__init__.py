"""Benchmarks of reactor in real headless Chromium: `python -m bench` (see README, "Benchmarks")."""
