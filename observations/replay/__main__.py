"""``python -m observations.replay PATH...``: load trajectories, report problems, load
time and how much file access was recognised per source."""

from __future__ import annotations

import argparse
import sys
import time

from observations.replay.load import load_trajectories
from observations.replay.stats import format_stats, recognition_stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m observations.replay", description=__doc__)
    parser.add_argument("paths", nargs="+", help="trajectory files or directories")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = load_trajectories(args.paths)
    elapsed = time.perf_counter() - started
    for problem in result.problems:
        print(f"skipped {problem}", file=sys.stderr)
    steps = sum(len(t.steps) for t in result.trajectories)
    print(
        f"loaded {len(result.trajectories)} trajectories ({steps} steps) in {elapsed:.2f}s; "
        f"{len(result.problems)} skipped"
    )
    print(format_stats(recognition_stats(result.trajectories)))
    return 0 if result.trajectories else 1


if __name__ == "__main__":
    sys.exit(main())
