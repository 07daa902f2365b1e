"""``python -m bench.progressive_feedback``: does usefulness feedback crowd relevance out?

Issue 27: a 60-iteration loop asking with the documented constant query (the task) and
marking the items that helped lost, at iteration 46, the psycopg2 fix it needed: fixes
marked helpful earlier filled the block. This replays such loops, where the item needed
changes over time, with and without feedback, through ``ContextLoop`` (the service every
adapter calls) on a real layer-file store.

Each loop (one per seed) works on one task, "Make the integration tests pass", and meets
problems from a fixed list (missing psycopg2, port 5432 taken, ...) one stretch at a time:
a new problem fails for 1-3 iterations (an iteration item and an error item each) and is
fixed in the next (an iteration item saying how); with probability ``--recur`` the next
stretch is a problem fixed before coming back, which fails for 1-3 iterations and is fixed
again with the earlier fix. At every iteration the agent first asks
``get_relevant_context(task, max_tokens)`` (the docs' loop), then stores its results.

The item *needed* at an iteration: during a recurrence, the problem's original fix; during
a new problem's stretch after its first failure, an error item of that stretch (any: they
say the same). An iteration counts as a hit when a needed item is in the block (whole or
shortened).

Arms (the same timeline, the blocks differ because the votes do):

- ``none``: no feedback at all;
- ``feedback``: the agent marks the needed item helpful whenever it is in the block, and,
  being imperfect, with probability ``--stray`` one other item of the block too: the first
  one after the task (``--stray-pick top``, the default: the issue's "the same helpful
  items every iteration", since a marked item ranks higher and is marked again) or any
  (``random``).

Prints, as JSON, the hit rates over every measured iteration and over recurrences only,
and feedback - none with a 95% bootstrap interval over loops. To see the ranking before
the fix, run it with the old code first on the path (``PYTHONPATH=<old checkout>/src``).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.__main__ import DEFAULT_CACHE, make_embedder
from sediment.context import ContextLoop, ContextSettings, FileContextStore
from sediment.embed import Embedder

TASK = "Make the integration tests pass"
PROBLEMS: list[tuple[str, str, str]] = [
    ("psycopg2", "ModuleNotFoundError: No module named 'psycopg2' while importing "
     "tests/integration/conftest.py",
     "Installed psycopg2-binary into the test virtualenv and added it to "
     "requirements-dev.txt; the integration tests import it for the database fixtures."),
    ("the database port", "OSError: [Errno 98] Address already in use: port 5432 for the "
     "test database",
     "Removed the stray postgres container holding port 5432 (docker rm -f pg-old) before "
     "starting the integration test database."),
    ("the missing users table", "psycopg2.errors.UndefinedTable: relation \"users\" does "
     "not exist",
     "Ran alembic upgrade head against the test database before the integration tests; "
     "the users table comes from migration 0003."),
    ("DATABASE_URL", "KeyError: 'DATABASE_URL' in tests/conftest.py",
     "Exported DATABASE_URL for the local app_test database in scripts/test.sh, which "
     "runs the integration tests."),
    ("redis", "redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379",
     "Started redis with docker compose up -d redis; the session tests need it."),
    ("the api_client fixture", "fixture 'api_client' not found",
     "Moved the api_client fixture from tests/unit/conftest.py to tests/conftest.py so the "
     "integration tests see it."),
    ("the webhook timeout", "TimeoutError: test_payment_webhook waited 30 s for the "
     "provider",
     "Mocked the payment provider with responses and set WEBHOOK_TIMEOUT=2 in the test "
     "settings."),
    ("order validation", "AssertionError: expected status 201, got 400 on POST /orders",
     "The order payload needs a currency; added currency='EUR' to the order factory."),
    ("report dates", "AssertionError: 2024-03-10 23:00 != 2024-03-11 00:00 in "
     "test_report_dates",
     "Set TZ=UTC for the test process and made the report dates timezone-aware."),
    ("TLS to the auth server", "ssl.SSLCertVerificationError when the tests call the local "
     "auth server",
     "Pointed REQUESTS_CA_BUNDLE at certs/dev-ca.pem for the integration tests."),
    ("the uploads directory", "PermissionError: [Errno 13] Permission denied: "
     "'/var/app/uploads'",
     "Set UPLOAD_DIR to a tmp_path in the integration test settings instead of "
     "/var/app/uploads."),
    ("duplicate emails", "IntegrityError: duplicate key value violates unique constraint "
     "users_email_key",
     "Each test now runs in a transaction that is rolled back, so user emails no longer "
     "collide between tests."),
    ("the frontend build", "Error: Cannot find module 'vite' when the e2e tests build the "
     "frontend",
     "Ran npm ci in frontend/ before the integration tests build the assets."),
    ("the email task", "AssertionError: the outbox is empty; the welcome email task never "
     "ran",
     "Set CELERY_TASK_ALWAYS_EAGER=True in the test settings so tasks run inline."),
    ("the customers fixture", "UnicodeDecodeError: 'ascii' codec can't decode byte 0xc3 "
     "reading fixtures/customers.csv",
     "Opened the fixtures with encoding='utf-8' and set LANG=C.UTF-8 in CI."),
    ("the S3 upload test", "botocore.exceptions.NoCredentialsError in test_upload",
     "Used moto's mock_aws in the upload tests and set AWS_DEFAULT_REGION=eu-west-1."),
]


@dataclass(frozen=True, slots=True)
class Step:
    iteration: int
    problem: int
    recurrence: bool
    fixed: bool
    """The last iteration of the stretch: the problem gets fixed."""


def timeline(seed: int, iterations: int, recur: float) -> list[Step]:
    rng = random.Random(seed)
    fresh = list(range(len(PROBLEMS)))
    rng.shuffle(fresh)
    fixed: list[int] = []
    out: list[Step] = []
    while len(out) < iterations:
        again = bool(fixed) and (not fresh or rng.random() < recur)
        p = rng.choice(fixed) if again else fresh.pop()
        length = rng.randint(1, 3) + 1
        for k in range(length):
            out.append(Step(len(out) + 1, p, again, k == length - 1))
        if not again:
            fixed.append(p)
    return out[:iterations]


def run_loop(steps: list[Step], embedder: Embedder, settings: ContextSettings,
             feedback: bool, max_tokens: int, stray: float, seed: int, pick: str = "top"
             ) -> list[tuple[bool, bool]]:
    """(recurrence, hit) per measured iteration."""
    rng = random.Random(seed * 7919 + 1)
    with tempfile.TemporaryDirectory() as tmp:
        store = FileContextStore(Path(tmp), profile=embedder.profile.to_dict(),
                                 dim=embedder.profile.dim,
                                 embedder_metadata=embedder.metadata())
        loop = ContextLoop(store, embedder, settings, project="bench")
        task = loop.store_context("bench", TASK + ".", "task")["id"]
        fix_of: dict[int, str] = {}
        errors: dict[int, list[str]] = {}
        out = []
        for st in steps:
            name, error, fix = PROBLEMS[st.problem]
            wanted = ([fix_of[st.problem]] if st.recurrence else errors.get(st.problem, []))
            got = loop.get_relevant_context("bench", TASK, max_tokens=max_tokens)
            block = [*got["included"], *got["shortened"]]
            used = next((i for i in block if i in wanted), None)
            if wanted:
                out.append((st.recurrence, used is not None))
                if feedback and used is not None:
                    loop.mark_useful("bench", used, True)
            if feedback and block and rng.random() < stray:
                others = [i for i in block if i not in (used, task)]
                if others:
                    loop.mark_useful("bench", others[0] if pick == "top"
                                     else rng.choice(others), True)
            if st.fixed:
                summary = (f"{name} came back; applied the earlier fix again." if st.recurrence
                           else f"Fixed {name}: {fix}")
                done = loop.store_iteration_result("bench", st.iteration, summary, True)
                if not st.recurrence:
                    fix_of[st.problem] = done["id"]
                errors.pop(st.problem, None)
            else:
                done = loop.store_iteration_result(
                    "bench", st.iteration, f"Tried to get past {name}; the tests still fail.",
                    False, error=error)
                errors.setdefault(st.problem, []).append(done["error_id"])
        return out


def _interval(values: np.ndarray, rng: np.random.Generator) -> list[float]:
    idx = rng.integers(0, len(values), (2000, len(values)))
    means = values[idx].mean(axis=1)
    return [round(float(np.percentile(means, 2.5)) * 100, 2),
            round(float(np.percentile(means, 97.5)) * 100, 2)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--loops", type=int, default=20, help="Loops (seeds 1..N).")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--recur", type=float, default=0.4,
                    help="Chance that the next problem is one fixed before.")
    ap.add_argument("--stray", type=float, default=0.3,
                    help="Chance per iteration that the agent also marks another item.")
    ap.add_argument("--stray-pick", choices=["top", "random"], default="top")
    ap.add_argument("--max-tokens", type=int, default=300)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="A [context] setting for both arms (repeatable), e.g. "
                         "feedback_half_life=10.")
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = ap.parse_args(argv)
    embedder = make_embedder(args.embedder, args.cache)
    types = {f.name: f.type for f in fields(ContextSettings)}
    overrides: dict[str, Any] = {}
    for kv in args.set:
        key, _, value = kv.partition("=")
        if key not in types:
            ap.error(f"--set: unknown [context] key {key!r}")
        overrides[key] = json.loads(value)
    settings = replace(ContextSettings(), **overrides)
    started = time.perf_counter()
    per_loop: dict[str, dict[str, list[float]]] = {
        arm: {"all": [], "recurrences": []} for arm in ("none", "feedback")}
    counts = {"all": 0, "recurrences": 0}
    for seed in range(1, args.loops + 1):
        steps = timeline(seed, args.iterations, args.recur)
        for arm in ("none", "feedback"):
            rows = run_loop(steps, embedder, settings, arm == "feedback", args.max_tokens,
                            args.stray, seed, args.stray_pick)
            rec = [h for r, h in rows if r]
            per_loop[arm]["all"].append(float(np.mean([h for _, h in rows])))
            per_loop[arm]["recurrences"].append(float(np.mean(rec)) if rec else float("nan"))
            if arm == "none":
                counts["all"] += len(rows)
                counts["recurrences"] += len(rec)
    rng = np.random.default_rng(27)
    out: dict[str, Any] = {"args": vars(args) | {"cache": str(args.cache)},
                           "measured iterations": counts,
                           "seconds": round(time.perf_counter() - started, 1)}
    for part in ("all", "recurrences"):
        none = np.asarray(per_loop["none"][part])
        fb = np.asarray(per_loop["feedback"][part])
        keep = ~(np.isnan(none) | np.isnan(fb))
        none, fb = none[keep], fb[keep]
        out[part] = {"in block, none": round(float(none.mean()) * 100, 2),
                     "in block, feedback": round(float(fb.mean()) * 100, 2),
                     "feedback - none": {"mean": round(float((fb - none).mean()) * 100, 2),
                                         "ci95": _interval(fb - none, rng)},
                     "loops where feedback < none": int((fb < none).sum()),
                     "feedback - none per loop": [round(float(x) * 100, 1)
                                                  for x in fb - none]}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
