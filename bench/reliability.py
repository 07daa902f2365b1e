"""kill -9 during writes, and concurrent writers, counted (issue 13, items 11 and 13).

    python -m bench.reliability [--kills 240] [--writers 4] [--writes 500]
                                [--doc docs/reliability.md]

Kills: a writer process appends one chunk after another to the local and delta layers
through the real write service, printing each id once its append returned (acknowledged);
after a random delay it gets SIGKILL. After every kill this counts layer files that fail to
open or validate (corrupt), acknowledged chunks missing from their layer (lost), and
temporaries left beside the layers (each is removed by the next writer's lock: the count
after the run's final write must be 0). Concurrency: ``--writers`` processes append
``--writes`` chunks each to one layer set at once; every chunk must be there exactly once,
with ids unique across layers. ``--doc`` rewrites the "Kill -9 and concurrent writers"
section of that page with the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.machine import describe
from bench.progress import log

SECTION = "## Kill -9 and concurrent writers"
INTRO = "What Sediment's own reliability runs found, and the commands that reproduce them."
READY = "READY"


def _layerset(directory: Path):  # type: ignore[no-untyped-def]
    from sediment.store import LayerSet

    return LayerSet.from_directory(directory, lock_timeout=120.0)


def child(directory: Path, tag: str, writes: int) -> None:
    """Append ``writes`` chunks (0: until killed), printing ``ACK layer id content``."""
    from sediment.embed import HashEmbedder
    from sediment.ops import WriteRequest, write_context

    ls, emb = _layerset(directory), HashEmbedder()
    print(READY, flush=True)
    n = 0
    while writes == 0 or n < writes:
        scope = "local" if n % 2 == 0 else "delta"
        content = f"{tag} write {n}: " + "lorem ipsum " * (n % 7)
        cid = write_context(ls, emb, WriteRequest(content=content, kind="note", confidence=0.5,
                                                    sources=[], scope=scope), actor="tester")
        print(f"ACK {scope} {cid} {tag} write {n}", flush=True)
        n += 1


def make_base(directory: Path, chunks: int = 200) -> None:
    from sediment.embed import HashEmbedder
    from sediment.format import Chunk, encode_layer

    emb = HashEmbedder()
    texts = [f"Base document {i} about topic {i % 17}." for i in range(chunks)]
    items = [Chunk(i, "canonical", t, "human", 1.0, 0, (f"docs/{i}.md:1",))
             for i, t in enumerate(texts, 1)]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "AGENTS.db").write_bytes(encode_layer(
        items, emb.embed(texts), metadata={"v": 1, "embedding_profile": emb.profile.to_dict()}))


def spawn(directory: Path, tag: str, writes: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.reliability", "--child", str(directory), tag, str(writes)],
        cwd=Path(__file__).resolve().parents[1], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _reader(proc: subprocess.Popen[str], lines: list[str], ready: threading.Event) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == READY:
            ready.set()
        else:
            lines.append(line.strip())
    ready.set()


@dataclass
class KillRun:
    kills: int = 0
    acknowledged: int = 0
    lost: int = 0
    corrupt: int = 0
    kills_leaving_a_temporary: int = 0
    temporaries_max: int = 0
    temporary_bytes_max: int = 0
    temporaries_after_next_write: int = 0
    seconds: float = 0.0
    lost_examples: list[str] = field(default_factory=list)


def _temporaries(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.endswith(".tmp")]


def _check(directory: Path, acked: dict[str, set[int]], run: KillRun) -> None:
    from sediment.errors import SedimentError
    from sediment.format import LayerFile

    present: dict[str, set[int]] = {}
    for name in ("local", "delta"):
        path = directory / f"AGENTS.{name}.db"
        if not path.exists():
            present[name] = set()
            continue
        try:
            f = LayerFile.open(path)
            if f.validate():
                raise SedimentError("invalid")
            present[name] = {int(i) for i in f.ids.tolist()}
        except SedimentError:
            run.corrupt += 1
            present[name] = set()
    for name, ids in acked.items():
        missing = ids - present.get(name, set())
        run.lost += len(missing)
        run.lost_examples += [f"{name}:{i}" for i in sorted(missing)[:3]]


def kill_run(directory: Path, kills: int, seed: int, max_delay: float) -> KillRun:
    rng = random.Random(seed)
    run = KillRun()
    acked: dict[str, set[int]] = {"local": set(), "delta": set()}
    t0 = time.perf_counter()
    for k in range(kills):
        proc = spawn(directory, f"k{k}", 0)
        lines: list[str] = []
        ready = threading.Event()
        reader = threading.Thread(target=_reader, args=(proc, lines, ready), daemon=True)
        reader.start()
        ready.wait(60)
        time.sleep(rng.uniform(0.0, max_delay))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        reader.join(10)
        for line in lines:
            m = re.match(r"ACK (\w+) (\d+) ", line)
            if m:
                acked[m.group(1)].add(int(m.group(2)))
                run.acknowledged += 1
        run.kills += 1
        temps = _temporaries(directory)
        run.kills_leaving_a_temporary += bool(temps)
        run.temporaries_max = max(run.temporaries_max, len(temps))
        run.temporary_bytes_max = max(run.temporary_bytes_max,
                                      sum(p.stat().st_size for p in temps if p.exists()))
        _check(directory, acked, run)
        if (k + 1) % 20 == 0:
            log(f"kills {k + 1}/{kills}: acknowledged {run.acknowledged}, lost {run.lost}, "
                f"corrupt {run.corrupt}, kills leaving a temporary "
                f"{run.kills_leaving_a_temporary}")
    final = spawn(directory, "final", 1)
    final.communicate(timeout=120)
    run.temporaries_after_next_write = len(_temporaries(directory))
    run.seconds = time.perf_counter() - t0
    return run


@dataclass
class ConcurrentRun:
    writers: int
    writes: int
    expected: int = 0
    found: int = 0
    duplicate_ids: int = 0
    missing: int = 0
    extra: int = 0
    invalid_files: int = 0
    temporaries: int = 0
    seconds: float = 0.0


def concurrent_run(directory: Path, writers: int, writes: int) -> ConcurrentRun:
    from sediment.format import LayerFile

    run = ConcurrentRun(writers, writes, expected=writers * writes)
    t0 = time.perf_counter()
    procs = [spawn(directory, f"w{w}", writes) for w in range(writers)]
    for p in procs:
        p.communicate(timeout=3600)
    run.seconds = time.perf_counter() - t0
    contents: list[str] = []
    ids: list[int] = []
    for name in ("local", "delta"):
        f = LayerFile.open(directory / f"AGENTS.{name}.db")
        run.invalid_files += bool(f.validate())
        for c in f.chunks():
            contents.append(c.content.split(":")[0])
            ids.append(c.id)
    wanted = {f"w{w} write {n}" for w in range(writers) for n in range(writes)}
    run.found = len(contents)
    run.duplicate_ids = len(ids) - len(set(ids))
    run.missing = len(wanted - set(contents))
    run.extra = len(contents) - len(set(contents)) + len(set(contents) - wanted)
    run.temporaries = len(_temporaries(directory))
    return run


def render(k: KillRun, c: ConcurrentRun, argv: list[str], seed: int) -> str:
    cmd = "python -m bench.reliability " + " ".join(argv)
    m = describe(cmd)
    load = ", ".join(f"{x:.1f}" for x in m.load_start)
    machine = (f"{m.cpu}, {m.usable_cores} of {m.cores} cores, {m.os}, Python {m.python}, "
               f"{m.date}, load average at start {load}")
    return "\n".join([
        SECTION,
        "",
        f"Command: `{cmd}` (seed {seed}); {machine}.",
        "",
        "A writer process appends chunks to the local and delta layers through the write "
        "service and prints each id once its append has returned; after a random delay it "
        "is killed with SIGKILL. After each kill every layer file is opened and validated "
        "and every acknowledged chunk is looked up; the next writer removes the temporary "
        "a killed writer left between creating it and renaming it (before that cleanup, "
        "every such kill left its temporary for good: the issue 13 audit counted 79 files, "
        "551 MB after 240 kills).",
        "",
        "| kill -9 during writes | value |",
        "|---|---|",
        f"| kills | {k.kills} |",
        f"| acknowledged writes | {k.acknowledged} |",
        f"| acknowledged writes lost | {k.lost} |",
        f"| corrupt layer files after a kill | {k.corrupt} |",
        f"| kills that left a temporary (killed mid-write) | {k.kills_leaving_a_temporary} |",
        f"| temporaries present at once, at most | {k.temporaries_max} "
        f"({k.temporary_bytes_max:,} bytes) |",
        f"| temporaries left after the next write | {k.temporaries_after_next_write} |",
        f"| time | {k.seconds:.0f} s |",
        "",
        f"| {c.writers} writers x {c.writes} writes at once | value |",
        "|---|---|",
        f"| chunks expected / found | {c.expected} / {c.found} |",
        f"| missing / extra / duplicate ids | {c.missing} / {c.extra} / {c.duplicate_ids} |",
        f"| invalid files / temporaries left | {c.invalid_files} / {c.temporaries} |",
        f"| time | {c.seconds:.0f} s |",
        "",
        "The suite keeps a bounded version: tests/store/test_kill.py kills real `sediment` "
        "commands at each rename of a write and of `proposals accept`.",
        "",
    ])


def write_doc(path: Path, section: str) -> None:
    """Replace this benchmark's section of ``path``, leaving every other section as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else f"# Reliability\n\n{INTRO}\n\n"
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + ("" if nxt < 0 else "\n" + text[nxt + 1:])
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--child"]:
        child(Path(args_list[1]), args_list[2], int(args_list[3]))
        return 0
    ap = argparse.ArgumentParser(prog="python -m bench.reliability")
    ap.add_argument("--kills", type=int, default=240)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--writes", type=int, default=500)
    ap.add_argument("--max-delay", type=float, default=0.6,
                    help="Longest wait before a kill, in seconds after the writer is ready.")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--doc", type=Path, default=None,
                    help="Rewrite this benchmark's section of this page (docs/reliability.md).")
    ap.add_argument("--workdir", type=Path, default=None)
    opts = ap.parse_args(args_list)
    with tempfile.TemporaryDirectory(dir=opts.workdir) as tmp:
        kills_dir, conc_dir = Path(tmp) / "kills", Path(tmp) / "concurrent"
        make_base(kills_dir)
        make_base(conc_dir)
        log(f"kill -9 run: {opts.kills} kills")
        k = kill_run(kills_dir, opts.kills, opts.seed, opts.max_delay)
        log(f"concurrent run: {opts.writers} writers x {opts.writes} writes")
        c = concurrent_run(conc_dir, opts.writers, opts.writes)
    section = render(k, c, args_list, opts.seed)
    print(section)
    if opts.doc is not None:
        write_doc(opts.doc, section)
        log(f"wrote {opts.doc}")
    ok = (k.lost == k.corrupt == k.temporaries_after_next_write == 0
          and c.found == c.expected and c.missing == c.extra == c.duplicate_ids == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
