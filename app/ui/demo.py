"""The first-launch demo offer, shown where an empty database would leave a page blank."""

from __future__ import annotations

import streamlit as st

from app.demo import DEMO_PARTS, run_demo
from app.ui.components import resolve_embedded
from app.ui.data import data_changed, get_store


def render_demo_offer(key: str) -> None:
    """An explanation and a button that fills the database with real runs of the embedded model."""
    store = get_store()
    with st.container(border=True):
        st.markdown(
            "**No runs yet.** Start with the demo: the embedded SmolLM2-135M model answers the "
            "built-in datasets under a handful of relations "
            f"({', '.join(p.title.lower() for p in DEMO_PARTS)}). It takes a few minutes on a "
            "laptop CPU; everything is cached, and you can stop and resume."
        )
        if st.button("Run the demo", key=f"{key}_demo", type="primary"):
            from app.embedded import get_server

            live = resolve_embedded(get_server().endpoint())
            if live is None:
                return
            bar = st.progress(0.0, text="Starting…")

            def on_progress(title, progress) -> None:
                fraction = progress.done / progress.total if progress.total else 0.0
                bar.progress(
                    min(1.0, fraction), text=f"{title}: {progress.done}/{progress.total} cases"
                )

            summaries = run_demo(store, live, on_progress)
            data_changed()
            total = sum(s.cases for s in summaries)
            st.success(f"Demo finished: {len(summaries)} runs, {total} cases. Open Analysis.")
