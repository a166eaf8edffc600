"""PMR testbed: an emulated phone (QEMU guest) under memory pressure.

Data flows one way, and the subpackages are its stages, each importing only
from those above it in this list:

- the package's own modules: errors, paths, TOML reading, host facts;
- config/: profiles, scenarios, schemes (TOML) -> the guest's spec.json
  (spec.py), and the plan of `pmrtb paper` (paper.py);
- guest/: the kernel build, the guest boot (vm.py, runtime/ inside the
  guest), its disks, time dilation and fault injection;
- analysis/: the raw files of a run directory -> per-run metrics (metrics.py);
- report/: runs -> summary.json (summary.py) -> report.md and plots
  (campaign_report.py), the regime report, paper.md (paper_report.py);
- workflows/: what the commands do, end to end: a campaign (campaign.py),
  the paper's evaluation, the reliability and probe runs, the calibration
  boots;
- cli.py: `pmrtb`.
"""
