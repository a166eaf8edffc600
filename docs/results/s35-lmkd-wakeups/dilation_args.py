"""Dilation with given bench args, three boots, without touching the cache."""
import statistics, subprocess, sys
from pathlib import Path
from pmr_testbed import dilation, guest, kernel, paths
args = ["bench", *sys.argv[1:]]
img = kernel.build("testbed")
work = Path("/work/exp/s35/dil"); work.mkdir(parents=True, exist_ok=True)
for i in range(3):
    hosts = [dilation._bench_json(subprocess.run([str(paths.RUNTIME_BIN), *args], capture_output=True, text=True).stdout)["ns_per_page"] for _ in range(3)]
    host = statistics.median(hosts)
    res = guest.boot(img.bzimage, exec_cmd=" ".join([str(paths.RUNTIME_BIN), *args]),
                     console_path=work / "console.log", deadline_s=300, ram_mb=1024, cpus=2,
                     accel="tcg", rwdirs=[], append=kernel.BOOT_ARGS["testbed"])
    g = dilation._bench_json(res.console)["ns_per_page"]
    print(" ".join(args), f"host {host:.1f} (runs {', '.join(f'{h:.1f}' for h in hosts)}) guest {g:.1f} factor {g/host:.2f}", flush=True)
