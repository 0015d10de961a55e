"""The rewrite yield of LLM-prompted relations, as the Probe and Analysis pages show it.

A relation whose rewriter gets few rewrites past the validity gate gives little evidence: its
cases are mostly SKIPs. The table says how many, and why; below half, a note says so plainly.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from storage.gate_verbs import WEAK_REWRITER_YIELD, RewriteYield

SHOWN_REASONS = 3


def reasons_text(reasons: tuple[tuple[str, int], ...]) -> str:
    """The most frequent SKIP reasons, "kind ×n", most first ("—" when there are none)."""
    if not reasons:
        return "—"
    shown = [f"{kind} ×{n}" for kind, n in reasons[:SHOWN_REASONS]]
    more = len(reasons) - SHOWN_REASONS
    return "; ".join(shown) + (f"; {more} more" if more > 0 else "")


def weak_rewriter_note(found: RewriteYield) -> str:
    return (
        f"The rewriter is too weak for {found.relation_id}: {found.valid} of {found.attempts} "
        f"rewrites ({found.share:.0%}) passed the validity gate, below "
        f"{WEAK_REWRITER_YIELD:.0%}, so most of its cases are SKIPs and measure nothing. A "
        "rewriter this weak also gets unfaithful rewrites past the gate (the embedded "
        "SmolLM2-135M: 13 of 102 on the held-out texts we read), so check its FAILs "
        "in Triage before trusting them. Use a stronger model as the transformation endpoint "
        "(**Transformation endpoint** in the run form, `--transformation-endpoint` on the "
        "command line)."
    )


def render_weak_rewriter_notes(yields: list[RewriteYield]) -> None:
    """A warning for each relation whose yield is below ``WEAK_REWRITER_YIELD``."""
    for found in yields:
        if found.too_weak:
            st.warning(weak_rewriter_note(found))


def render_rewrite_yield(yields: list[RewriteYield], *, notes: bool = True) -> None:
    """A table of each LLM-prompted relation's yield and SKIP reasons, and (``notes``) the
    weak-rewriter notes. Nothing when no LLM-prompted relation was asked for a rewrite."""
    if not yields:
        return
    st.markdown("**Rewrite yield of LLM-prompted relations** (valid rewrites / attempts)")
    st.dataframe(
        pd.DataFrame(
            {
                "relation": [y.relation_id for y in yields],
                "attempts": [y.attempts for y in yields],
                "valid rewrites": [y.valid for y in yields],
                "yield": [y.share for y in yields],
                "SKIP reasons": [reasons_text(y.skip_reasons) for y in yields],
            }
        ),
        hide_index=True,
        column_config={"yield": st.column_config.NumberColumn(format="percent")},
    )
    if notes:
        render_weak_rewriter_notes(yields)
