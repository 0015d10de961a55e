"""Batch mode: export a planned run as request files, import the answers, judge like a run.

``formats`` reads and writes the files (OpenAI Batch input/output, vLLM's ``run_batch``),
``export`` plans a run and writes one request per call not yet answered, ``importer`` fills the
call cache from result files and finishes the runs they answer.
"""
