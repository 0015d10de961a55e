"""Metrics, statistics, the metric catalogue, figures and triage maths."""
