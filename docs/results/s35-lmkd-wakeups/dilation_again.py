"""Measure the time dilation again without touching build/dilation.json."""
from pathlib import Path
from pmr_testbed import dilation, guest, kernel, paths
img = kernel.build("testbed")
host = dilation._host_bench()
work = Path("/work/exp/s35/dil"); work.mkdir(parents=True, exist_ok=True)
res = guest.boot(img.bzimage, exec_cmd=" ".join([str(paths.RUNTIME_BIN), *dilation.BENCH_ARGS]),
                 console_path=work / "console.log", deadline_s=180, ram_mb=1024, cpus=2,
                 accel="tcg", rwdirs=[], append=kernel.BOOT_ARGS["testbed"])
inside = dilation._bench_json(res.console)
print("host", host["ns_per_page"], "guest", inside["ns_per_page"], "factor",
      round(inside["ns_per_page"] / host["ns_per_page"], 2))
