"""``python -m bench.credentials``: how often credential detection is right on the labelled
sets of ``bench.credential_corpus`` (issue 26, item 10).

Prints the share of credential formats refused and of ordinary lines accepted (by origin:
this repository's source, its git log, generated logs), the time per line, and
with ``--show`` every miss. Runs against an older tree too (``PYTHONPATH=old/src``).

    python -m bench.credentials [--show] [--all]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from bench.credential_corpus import credential_samples, git_log_lines, log_lines, repository_lines
from sediment.credentials import find_credentials


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.credentials", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--show", action="store_true", help="print every miss")
    p.add_argument("--all", action="store_true",
                   help="every line of src/, not the 6,000 the test samples")
    opts = p.parse_args(argv)
    samples = credential_samples()
    missed = [(name, text) for name, text in samples if not find_credentials(text)]
    print(f"credential formats refused: {len(samples) - len(missed)} of {len(samples)} "
          f"({1 - len(missed) / len(samples):.1%})")
    for name, text in missed if opts.show else ():
        print(f"  missed {name}: {text[:100]}")
    for label, lines in (("repository source", repository_lines(10**9 if opts.all else 6000)),
                         ("git log messages", git_log_lines()),
                         ("generated logs, lockfiles, commit lines", log_lines())):
        t = time.perf_counter()
        refused = [(o, line, [f.type for f in found]) for o, line in lines
                   if (found := find_credentials(line))]
        per_line = (time.perf_counter() - t) / max(len(lines), 1) * 1000
        print(f"{label}: accepted {len(lines) - len(refused)} of {len(lines)} "
              f"({1 - len(refused) / max(len(lines), 1):.2%}), {per_line:.2f} ms per line; "
              f"refused as {dict(Counter(t for r in refused for t in r[2]))}")
        for origin, line, kinds in refused if opts.show else ():
            print(f"  refused {origin} {kinds}: {line[:120]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
