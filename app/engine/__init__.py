"""Planning, sending, judging and writing a run; the local model server; the embedder."""
