"""Assemble the Markdown report: header, machine, headline verdict, then every section."""

from __future__ import annotations

from pathlib import Path

from bench import sections
from bench.fmt import count, gbps, ms, table
from bench.machine import Machine
from bench.runner import Results

TARGET_ROWS = 1_000_000
TARGET_TYPE = "i8"
TARGET_FACTOR = 2.0


def _machine(m: Machine) -> str:
    blas = "; ".join(
        ", ".join(f"{k} {v}" for k, v in b.items() if k != "filepath" and v) for b in m.blas)
    load = "/".join(f"{x:.2f}" for x in m.load_start)
    load_end = "/".join(f"{x:.2f}" for x in m.load_end)
    rows = [
        ["CPU", m.cpu],
        ["Cores", f"{m.cores} ({m.usable_cores} usable by this process)"],
        ["SIMD flags", ", ".join(m.simd) or "none of the ones checked"],
        ["RAM", f"{m.ram_bytes / 2**30:.1f} GiB"],
        ["OS", m.os],
        ["Python", m.python],
        *[[name, version] for name, version in m.versions.items()],
        ["numpy BLAS (threadpoolctl)", blas],
        ["simsimd kernels available", ", ".join(m.simsimd_kernels) or "unknown"],
        *[[f"`{k}`", v] for k, v in m.env.items()],
        ["Load average 1/5/15 min, start", load],
        ["Load average 1/5/15 min, end", load_end],
    ]
    return "## Machine\n\n" + table(["", ""], rows, ["l", "l"])


def verdict(res: Results) -> tuple[str, str]:
    """("PASS" | "FAIL" | "NOT MEASURED", one sentence) for the 1M x i8 target."""
    bw = res.bandwidth
    size = next((s for s in res.sizes if s.rows == TARGET_ROWS), None)
    if bw is None or size is None or TARGET_TYPE not in size.vector:
        return "NOT MEASURED", (f"this run did not include {count(TARGET_ROWS)} chunks "
                                f"(sizes: {', '.join(count(s) for s in res.options.sizes)})")
    v = size.vector[TARGET_TYPE]
    limit = v.bytes_scanned / (bw.limit_gbps * 1e9)
    ratio = v.engine.p50 / limit
    word = "PASS" if ratio <= TARGET_FACTOR else "FAIL"
    return word, (f"{count(TARGET_ROWS)} x {res.options.dim} {TARGET_TYPE} exact search p50 "
                  f"{ms(v.engine.p50)} ms through the engine; the bandwidth limit is "
                  f"{v.bytes_scanned / 1e6:,.0f} MB / {gbps(bw.limit_gbps)} GB/s = "
                  f"{ms(limit)} ms, so the search takes {ratio:.2f}x the limit "
                  f"(target: at most {TARGET_FACTOR:g}x)")


def render(res: Results) -> str:
    word, sentence = verdict(res)
    o, m = res.options, res.machine
    head = [
        "# Benchmarks",
        "",
        "Written by the benchmark suite in `bench/` (these are measurements, not tests). "
        "Regenerate with the command below from the repository root; `./run bench` does the "
        "same after installing the `bench` dependency group.",
        "",
        f"- Command: `{m.command}`",
        f"- Date: {m.date}; whole run {res.seconds / 60:.1f} min"
        f"{' (quick mode: smoke numbers)' if o.quick else ''}",
        f"- Target, {count(TARGET_ROWS)} x {o.dim} i8 exact search within "
        f"{TARGET_FACTOR:g}x of the memory-bandwidth limit: **{word}**: {sentence}.",
        "- Other processes running at the same time slow everything down; the load average "
        "at the start and end of the run is in the machine table. Trust numbers from a quiet "
        "machine (load average well under the core count).",
    ]
    # The run itself keeps both cores busy, so only the load before it says whether
    # something else was competing.
    busy = m.load_start[0]
    if busy > 0.5 * m.cores:
        head.append(f"- **This run was taken under load** (1-minute load average at the start "
                    f"{busy:.2f} on {m.cores} cores): treat these as smoke numbers and "
                    "re-run on a quiet machine.")
    if res.skipped:
        head += [f"- **Skipped {count(r)} chunks**: {why}." for r, why in res.skipped]
    head += [f"- {n}" for n in res.notes]
    parts = ["\n".join(head), _machine(m), *sections.all_sections(res), PEERS,
             sections.method(res)]
    return "\n\n".join(parts) + "\n"


PEERS = """## Beside other systems

Sediment against LanceDB, Chroma, sqlite-vec, FAISS and usearch on identical vectors at
100k and 1M (build time, open time, p50 / p99, QPS, recall@10, peak RSS, disk, and the
equal-recall comparison of the approximate indexes) is its own, longer run:
`python -m bench.peers` (`./run bench-peers`), whose table and notes are in
[peers.md](peers.md). Its latest plot:

![latency against recall, Sediment and its peers](peers.png)"""


def write(res: Results, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if res.options.only and out.exists():
        out.write_text(splice(out.read_text(encoding="utf-8"), res), encoding="utf-8")
        return
    out.write_text(render(res), encoding="utf-8")


def splice(text: str, res: Results) -> str:
    """``text`` with the sections ``--only`` ran replaced (or added before "Beside other
    systems"), and a line saying which command produced them."""
    prefixes = [p for name in res.options.only for p in sections.SECTION_OF[name]]
    fresh = [s for s in sections.all_sections(res) if s.startswith(tuple(prefixes))]
    blocks = text.split("\n\n## ")
    blocks = [blocks[0], *("## " + b for b in blocks[1:])]
    for new in fresh:
        head = new.split(" ", 2)[1]  # "8." and the like
        note = (f"\n\n*This section: `{res.machine.command}`, {res.machine.date}, load "
                f"average {res.machine.load_start[0]:.2f} at the start.*")
        at = [i for i, b in enumerate(blocks) if b.startswith(f"## {head} ")]
        if at:
            blocks[at[0]] = new + note
        else:
            tail = next((i for i, b in enumerate(blocks)
                         if b.startswith("## Beside other systems")), len(blocks))
            blocks.insert(tail, new + note)
    return "\n\n".join(blocks).rstrip("\n") + "\n"
