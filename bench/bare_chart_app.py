"""The browser bench's baseline: a bare Streamlit page that draws a given Vega-Lite spec.

No sidebar, filters, database or aggregation: a title and the chart read from the JSON file
named by ``BARE_CHART_SPEC``. What any Streamlit page needs to show that chart in Chromium is the
floor the Analysis page is compared with (``bench_analysis_browser.py``).
"""

import json
import os
from pathlib import Path

import streamlit as st

st.set_page_config(page_title="baseline", layout="wide")
st.title("Analysis")
st.vega_lite_chart(json.loads(Path(os.environ["BARE_CHART_SPEC"]).read_text()), width="stretch")
