"""The review queue over real HTTP against ``sediment serve``: filters as links, short ids,
a page per proposal (Markdown rendered and sanitised, hostile text inert, a 5 MB text shown
in part), decisions confirmed before they are written, batch over a filter with its count
checked, accept with edits, and a reviewer who loses a race keeping their reason.

One server for the module (the suite's budget): each test decides only its own proposals.
"""

from __future__ import annotations

import html
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Runner
from tests.web.conftest import OPEN, csrf_of, sign_in
from tests.web.review_site import Seeded, seeded_site

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    with seeded_site(tmp_path_factory.mktemp("review")) as s:
        yield s


@pytest.fixture(scope="module")
def alice(seeded: Seeded) -> Iterator[httpx.Client]:
    c = sign_in(seeded.site.base, "alice")
    OPEN.remove(c)  # kept for the module, not closed after the first test
    yield c
    c.close()


def _post(c: httpx.Client, s: Seeded, data: dict[str, object]) -> httpx.Response:
    token = csrf_of(c.get("/ui/queue").text)
    return c.post("/ui/decide", data={"csrf": token, **data}, headers={"Origin": s.site.base})


def _status(sediment: Runner, s: Seeded) -> dict[int, dict[str, object]]:
    return {p["proposal_id"]: p for p in sediment(
        "proposals", "list", "--dir", str(s.site.store), "--json").json()}


def test_the_queue_filters_sorts_and_links(seeded: Seeded, alice: httpx.Client) -> None:
    page = alice.get("/ui/queue").text
    assert "10 pending proposals." in page
    assert page.count('<li class="row') == 10
    row = page.split(f'id="p{seeded.edit}"')[1].split("</li>")[0]
    assert f"#{str(seeded.edit)[-3:]}" in row and "Deploys freze on Fridays." in row
    assert ">convention<" in row and ">dave<" in row and ">0.40<" in row
    assert "just now</time>" in row and 'title="20' in row  # the exact time on hover
    assert f'href="/ui/proposals/{seeded.edit}"' in row
    only = alice.get("/ui/queue", params={"kind": "batchkind"}).text
    assert "; 3 match the filter." in only
    assert all(f'id="p{p}"' in only for p in seeded.batch) and f'id="p{seeded.edit}"' not in only
    assert 'name="kind" value="batchkind"' in only  # the decide form keeps the filter
    assert "batchkind (3)" in page  # facets count what is pending
    conflict = alice.get("/ui/queue", params={"conflict": "yes"}).text
    assert f'id="p{seeded.site.proposals[1]}"' in conflict and "; 1 matches the filter." in conflict
    text = alice.get("/ui/queue", params={"q": "FLUSHED", "author": "erin"}).text
    assert f'id="p{seeded.race}"' in text and text.count('<li class="row') == 1
    low = alice.get("/ui/queue", params={"sort": "confidence"}).text
    assert low.index(f'id="p{seeded.edit}"') < low.index(f'id="p{seeded.race}"')
    none = alice.get("/ui/queue", params={"author": "nobody"}).text
    assert "No pending proposal matches this filter." in none


def test_a_proposal_page_is_rendered_and_hostile_text_is_inert(seeded: Seeded,
                                                                alice: httpx.Client) -> None:
    r = alice.get(f"/ui/proposals/{seeded.hostile}")
    assert r.status_code == 200
    body = r.text.split('<div class="markdown">')[1].split("</div>")[0]
    assert "<h3>Release notes</h3>" in body
    assert "<script" not in body and "<img" not in body and 'href="javascript' not in body
    assert "&lt;script&gt;" in body and "\\u202e" in body and "\\x1b[2J" in body
    assert "\u202e" not in r.text and "\x1b" not in r.text
    assert "proposed by <strong>mallory</strong>" in r.text
    assert "Sources</h2>" not in r.text and "Differences</h2>" not in r.text  # none: left out
    big = alice.get(f"/ui/proposals/{seeded.big}")
    assert big.status_code == 200 and len(big.text) < 400_000
    assert "Showing the first 200,000 of 5,130,025 characters." in big.text
    assert 'id="content"' not in big.text  # too long to edit in a form
    queue = alice.get("/ui/queue").text
    assert "A five megabyte finding." in queue and len(queue) < 100_000
    assert alice.get("/ui/proposals/999999").status_code == 404
    assert alice.get("/ui/proposals/abc").status_code == 404


def test_a_batch_over_a_filter_confirms_its_count(seeded: Seeded, alice: httpx.Client,
                                                  sediment: Runner) -> None:
    flt = {"kind": "batchkind", "scope": "filter", "action": "accept"}
    stale = _post(alice, seeded, {**flt, "expect": "2", "confirm": "yes"})
    assert stale.status_code == 200
    assert "The filter now selects 3 proposals, not 2" in html.unescape(stale.text)
    assert all(_status(sediment, seeded)[p]["status"] == "pending" for p in seeded.batch)
    done = _post(alice, seeded, {**flt, "expect": "3", "confirm": "yes"})
    assert done.status_code == 303 and done.headers["location"].startswith(
        "/ui/queue?kind=batchkind")
    statuses = _status(sediment, seeded)
    assert all(statuses[p]["status"] == "accepted" for p in seeded.batch)
    assert statuses[seeded.edit]["status"] == "pending"  # outside the filter


def test_accept_with_edits_records_the_reviewers_version(seeded: Seeded, alice: httpx.Client,
                                                         sediment: Runner) -> None:
    edit = {"action": "edit", "proposal": str(seeded.edit), "from": str(seeded.edit),
            "content": "Deploys freeze on Fridays.", "reason": "typo"}
    ask = _post(alice, seeded, edit)
    assert ask.status_code == 200 and "Deploys freeze on Fridays." in ask.text
    done = _post(alice, seeded, {**edit, "confirm": "yes"})
    assert done.status_code == 303 and done.headers["location"].startswith("/ui/proposals/")
    shown = sediment("proposals", "show", str(seeded.edit), "--dir", str(seeded.site.store),
                     "--json").json()
    assert shown["status"] == "accepted" and shown["decisions"][0]["reviewer"] == "alice"
    user = sediment("inspect", "--layer", str(seeded.site.store / "AGENTS.user.db"), "--id",
                    str(shown["context_id"]), "--json").json()
    assert user["content"] == "Deploys freeze on Fridays."
    assert user["sources"][0] == shown["context_id"]  # provenance: the agent's chunk
    assert shown["chunk"]["content"] == "Deploys freze on Fridays."  # kept in delta
    page = alice.get(f"/ui/proposals/{seeded.edit}").text
    assert "Accepted with the reviewer&#39;s edits" in page and "<ins>freeze" in page


def test_a_reviewer_who_loses_a_race_keeps_their_reason(seeded: Seeded, alice: httpx.Client,
                                                        sediment: Runner) -> None:
    form = csrf_of(alice.get(f"/ui/proposals/{seeded.race}").text)
    first = sediment("proposals", "accept", str(seeded.race), "--dir", str(seeded.site.store))
    assert first.code == 0, first.err
    lost = alice.post("/ui/decide", data={
        "csrf": form, "action": "reject", "proposal": str(seeded.race),
        "from": str(seeded.race), "reason": "Flushing is daily, not hourly.",
        "confirm": "yes"}, headers={"Origin": seeded.site.base})
    assert lost.status_code == 409
    assert "was already decided by" in lost.text
    assert ">Flushing is daily, not hourly.</textarea>" in lost.text
    assert _status(sediment, seeded)[seeded.race]["status"] == "accepted"

