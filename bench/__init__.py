"""Benchmarks of reactor in real headless Chromium: `python -m bench` (docs/DEVELOPING.md)."""
