"""Working as a team: download and import labels, and agreement between labelers."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.analysis.triage.agreement import agreement_table
from app.analysis.triage.label_exchange import (
    IMPORT_FORMATS,
    LabelImportError,
    export_labels,
    import_labels,
)
from app.ui.components import inert
from app.ui.data import data_changed
from app.ui.triage.filters import CaseFilters
from app.ui.triage.state import flash
from storage import Store


def render_label_downloads(store: Store) -> None:
    columns = st.columns(2)
    columns[0].download_button(
        "Download labels (CSV)",
        export_labels(store, "csv"),
        file_name="morphscope-labels.csv",
        mime="text/csv",
        key="triage_export_csv",
    )
    columns[1].download_button(
        "Download labels (JSONL)",
        export_labels(store, "jsonl"),
        file_name="morphscope-labels.jsonl",
        mime="application/jsonl",
        key="triage_export_jsonl",
    )


def render_label_import(store: Store) -> None:
    """Upload a teammate's export; nothing is imported unless every entry is valid."""
    upload = st.file_uploader(
        "Import a teammate's labels", type=list(IMPORT_FORMATS), key="triage_import"
    )
    if upload is None or not st.button("Import", key="triage_import_go"):
        return
    file_format = Path(upload.name).suffix.lstrip(".").lower()
    try:
        result = import_labels(store, upload.getvalue().decode("utf-8"), file_format)
    except UnicodeDecodeError:
        st.error("The file is not UTF-8 text; nothing was imported.")
    except LabelImportError as error:
        st.error("Nothing was imported:\n\n" + "\n".join(f"- {inert(e)}" for e in error.errors))
    else:
        flash(
            "success",
            f"Imported {result['added']} label entries ({result['duplicates']} already present).",
        )
        data_changed()
        st.rerun()


def render_agreement(store: Store, filters: CaseFilters) -> None:
    """Cohen's kappa between labelers on the cases both labeled."""
    agreement = agreement_table(store, filters.run_ids)
    if agreement.empty:
        st.caption("Agreement (Cohen's kappa) appears once two labelers label the same cases.")
    else:
        st.markdown("**Agreement between labelers** (Cohen's kappa on cases both labeled)")
        st.dataframe(agreement, hide_index=True)


def render_team(store: Store, filters: CaseFilters) -> None:
    with st.expander("Team: export, import, agreement"):
        render_label_downloads(store)
        render_label_import(store)
        render_agreement(store, filters)
