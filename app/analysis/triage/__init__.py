"""Triage engine: what labels on FAIL verdicts feed back into the numbers.

``false_positives``: false-positive rates and confirmed violation rates; ``thresholds``: threshold
suggestions from the labels and verdicts recomputed under a new threshold; ``agreement``: how two
labelers agree (Cohen's kappa); ``label_exchange``: label history exported and imported.

No streamlit and no network here. Verdicts are recomputed from the *stored* measured values
(``cases.value``) only — an applied threshold never calls an endpoint or an embedding model.
"""
