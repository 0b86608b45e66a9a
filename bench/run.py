"""``make bench``: run every benchmark script in this folder and print their numbers."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from starmall import embedded_redis  # noqa: E402

started_here = not os.environ.get("REDIS_URL") and not embedded_redis.is_running()
failed = 0
try:
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"=== {script.name}", flush=True)
        failed += subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode != 0
finally:
    if started_here:  # leave the machine as we found it
        embedded_redis.stop()
sys.exit(1 if failed else 0)
