"""``python -m bench [--quick] [--sizes ...] [--out ...] [--workdir ...]``."""

from __future__ import annotations

import sys

from bench import options, report, runner
from bench.progress import log


def main(argv: list[str] | None = None) -> int:
    opts = options.parse(argv)
    log(f"{opts.command}: sizes {', '.join(str(s) for s in opts.sizes)}")
    results = runner.run(opts)
    report.write(results, opts.out)
    word, sentence = report.verdict(results)
    log(f"1M i8 target: {word}: {sentence}")
    log(f"wrote {opts.out} in {results.seconds / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
