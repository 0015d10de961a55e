"""The headless command line: one module per command group."""
