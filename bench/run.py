"""``make bench``: run every benchmark script in this folder and print their numbers."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

failed = 0
for script in sorted(HERE.glob("bench_*.py")):
    print(f"=== {script.name}", flush=True)
    failed += subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode != 0
sys.exit(1 if failed else 0)
