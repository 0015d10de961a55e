"""Triage's "Find the minimal change" (issue 26 §4): a stored shrink is shown with its kept
edit against the source; a case without one offers the button."""

from __future__ import annotations

from relations.edits import apply_edits, diff_edits
from storage import Store
from tests.pages.conftest import open_page
from tests.triage_data import make_case, save_runs

PAGE = "pages/triage.py"


def test_a_stored_shrink_shows_the_kept_edit(app_db) -> None:
    store = Store(app_db)
    source, follow = "The cat sat on the mat.", "Th3 cat was sitting on the mat."
    save_runs(
        store,
        [
            make_case("a1", index=1, source_text=source, followup_text=follow),
            make_case("a2", index=2),
        ],
    )
    source_fields = {"question": source}
    edits = diff_edits(source_fields, {"question": follow})
    # 'The' → 'Th3', 'sat' → 'was sitting': two hunks, the first kept.
    assert len(edits) == 2
    store.save_shrink(
        case_id="a1",
        run_id="run-a",
        relation_id="si.paraphrase",
        status="minimal",
        reason="",
        edits_total=2,
        kept_edits=[edits[0].to_dict()],
        minimal_followup=apply_edits(source_fields, edits[:1]),
        calls=3,
        confirmed="1/1",
    )
    store.close()
    at = open_page(PAGE)
    assert not at.exception, at.exception
    shown = " ".join(t.value for t in at.text)
    assert "1 of 2 edits is enough: 'The' → 'Th3' in question" in shown
    assert any("Minimal follow-up" in m.value for m in at.markdown)
    assert at.button(key="shrink_a1").label == "Search the minimal change again"


def test_a_case_without_a_shrink_offers_the_button(app_db) -> None:
    store = Store(app_db)
    save_runs(store, [make_case("a1", index=1)])
    store.close()
    at = open_page(PAGE)
    assert not at.exception, at.exception
    assert at.button(key="shrink_a1").label == "Find the minimal change"


def test_a_case_waiting_on_a_batch_round_says_so(app_db) -> None:
    from app.engine.shrink import SINGLE, DdminState
    from storage.shrink_round_verbs import ShrinkSearchRow

    store = Store(app_db)
    save_runs(store, [make_case("a1", index=1)])
    state = DdminState.start(2, SINGLE, 60)
    store.save_shrink_round([ShrinkSearchRow("a1", "run-a", state.to_dict(), 3)], [], [])
    store.close()
    at = open_page(PAGE)
    assert not at.exception, at.exception
    assert any("waits on the results of round 3" in c.value for c in at.caption)
