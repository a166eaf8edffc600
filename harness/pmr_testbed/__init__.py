"""PMR testbed: an emulated phone (QEMU guest) under memory pressure.

Data flows one way: scenario + profile + schemes (TOML) -> guest spec
(spec.py) -> guest run (guest.py, runtime/ inside the guest) -> raw files
in the run directory -> per-run metrics (metrics.py) -> summary.json
(summary.py) -> report.md and plots (report.py).
"""
