"""Run every ``benchmarks/bench_*.py`` in turn (``make bench``).

Each script writes ``benchmarks/results/<name>.json`` and prints one line of summary; this
runner adds a table of which ran, then renders ``docs/performance.md`` from every result file
(``benchmarks/report_md.py``), so the page always shows the newest figures of each
benchmark, including those not run this time. Extra arguments (``BENCH_ARGS``) are passed
to every script, e.g. ``--quick``; bare words pick scripts by name (``matcher pages``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import report_md  # noqa: E402 - beside this file, found through the line above


def main(argv: list[str]) -> int:
    only = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    scripts = sorted(HERE.glob("bench_*.py"))
    if only:
        scripts = [s for s in scripts if any(name in s.stem for name in only)]
    (HERE / "results").mkdir(exist_ok=True)
    summary: list[tuple[str, str, float]] = []
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *flags], cwd=HERE.parent)
        summary.append(
            (script.stem, "ok" if code == 0 else f"exit {code}", time.perf_counter() - started)
        )
    print("\n| benchmark | status | seconds |\n| --- | --- | ---: |")
    for name, status, seconds in summary:
        print(f"| {name} | {status} | {seconds:.1f} |")
    report_md.main([])
    return 0 if all(status == "ok" for _, status, _ in summary) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
