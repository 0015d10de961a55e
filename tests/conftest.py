"""Shared fixtures: temporary stores, the fake OpenAI server, a fast offline embedder."""

from __future__ import annotations

import functools
import hashlib
import re
import sys

import numpy as np
import pytest

from app.engine.embedder import EmbeddingCache
from core.types import Endpoint
from storage import Store
from tests.fake_openai import FakeBehaviour, FakeOpenAIServer


class BagOfWordsEmbedder:
    """Deterministic hashed bag-of-words vectors: fast stand-in for MiniLM in unit tests."""

    name = "test-bow"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        vectors = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                vectors[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1.0
            norm = np.linalg.norm(vectors[row])
            vectors[row] = vectors[row] / norm if norm else vectors[row]
            if not norm:
                vectors[row, 0] = 1.0
        return vectors


def mock_runner(store: Store, respond):
    """A runner whose every endpoint answers through one ``MockClient(respond)``, embedding with
    ``BagOfWordsEmbedder``: the engine with no network and no model."""
    from app.clients.mock import MockClient
    from app.engine.runner import Runner

    embeddings = EmbeddingCache(BagOfWordsEmbedder(), store)
    return Runner(store, embeddings, client_factory=MockClient(respond).factory)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "test.db")
    yield s
    s.close()


@pytest.fixture
def embeddings(store):
    return EmbeddingCache(BagOfWordsEmbedder(), store)


@pytest.fixture
def fake_server():
    with FakeOpenAIServer(FakeBehaviour()) as server:
        yield server


@pytest.fixture
def fake_endpoint(fake_server):
    return Endpoint(name="fake", base_url=fake_server.base_url, model="fake-model", concurrency=8)


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path, monkeypatch):
    """Never touch the user's data/ folder from tests."""
    monkeypatch.setenv("MORPHSCOPE_DB", str(tmp_path / "app.db"))
    monkeypatch.setenv("MORPHSCOPE_AUTOSTART", "0")


@pytest.fixture(autouse=True)
def _streamlit_components_scanned_once():
    """Each new ``AppTest`` scans every installed package's metadata for Streamlit components
    (~0.35 s of CPU each time, for none); packages do not change during a test session, so the
    scan runs once per process. Only where a test module has already imported Streamlit."""
    if "streamlit" in sys.modules:
        from streamlit.components.v2 import manifest_scanner

        scan = manifest_scanner.scan_component_manifests
        if not hasattr(scan, "cache_info"):
            manifest_scanner.scan_component_manifests = functools.cache(scan)


# AppTest's own default is 3 s per script run; on these shared 2-core machines a page's first
# run takes longer under load, and a timeout there says nothing about the page. Every AppTest
# waits up to APPTEST_TIMEOUT_S unless a test asks for more.
APPTEST_TIMEOUT_S = 60


@pytest.fixture(autouse=True)
def _patient_app_tests():
    if "streamlit" in sys.modules:
        from streamlit.testing.v1 import AppTest

        init = AppTest.__init__
        if not getattr(init, "_patient", False):

            def patient_init(self, script_path, *, default_timeout, **kwargs):
                init(
                    self,
                    script_path,
                    default_timeout=max(default_timeout, APPTEST_TIMEOUT_S),
                    **kwargs,
                )

            patient_init._patient = True
            AppTest.__init__ = patient_init


# ---------------------------------------------------------------- the CLI's run command


@pytest.fixture
def inputs_file(tmp_path):
    """20 sentiment inputs, half "good", half "cold", as a CSV file."""
    path = tmp_path / "inputs.csv"
    lines = ["text"] + [
        f"Review {i}: the food was {'good' if i % 2 else 'cold'}." for i in range(20)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def bow(monkeypatch):
    """The fast offline embedder (``make_runner`` binds its default when it is defined)."""
    import functools

    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    fast = functools.partial(workspace.make_runner, embedder_factory=BagOfWordsEmbedder)
    monkeypatch.setattr(workspace, "make_runner", fast)
    # `run` starts the default embedder before anything else: no model process in these tests.
    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)
