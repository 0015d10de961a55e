"""The metric catalogue: every metric's name, unit, meaning and heatmap scale
(:mod:`~app.analysis.catalogue.definitions`), the table layouts that show them
(:mod:`~app.analysis.catalogue.tables`) and how their values are written
(:mod:`~app.analysis.catalogue.formats`)."""
