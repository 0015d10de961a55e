"""The API-key setting names an environment variable; it is never a key, and a named variable
that is not set stops a run before its first call (issue 20, items 6 and 7).

One rule (``core.key_names.validate_api_key_env``) serves the CLI, the Endpoints page and the
store; the pages' side is tested in ``tests/pages/test_keys_and_damage_pages.py``.
"""

from __future__ import annotations

import pytest

from app.cli.main import main
from app.clients.endpoint_settings import missing_key
from core.key_names import looks_like_secret, validate_api_key_env
from core.types import Endpoint
from storage import Store

# What users pasted into the "variable name" field. Made-up values in each vendor's format.
SECRETS = {
    "OpenAI": "sk-proj-Abc123def456ghi789jklMNO",
    "Hugging Face": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz12345678",
    "Groq": "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",
    "xAI": "xai-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",
    "AWS access key id": "AKIAIOSFODNN7EXAMPLE",
    "GitHub": "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5",
    "GitHub fine-grained": "github_pat_11ABCDEFG0abcdefghij_klmnopqrstuvwxyz0123",
    "Google": "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "Stripe": "sk_live_51Habc123def456ghi",
    "mixed case, 16": "MyKey1234abcdEFG",
    "mixed case, long": "MyKey1234abcdEFGH5678ijklMNOP",
    "lower-case hex": "0123456789abcdef0123456789abcdef",
}
NAMES = [
    "OPENAI_API_KEY",
    "MY_KEY_2",
    "HF_TOKEN",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AZURE_OPENAI_API_KEY_EASTUS2",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OPENAI_API_KEY_2024",
    "openai_api_key",
    "hf_token",
    "MyApiKey",
    "_K1",
]


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
def test_a_key_is_refused_as_a_variable_name_without_repeating_it(secret):
    assert looks_like_secret(secret)
    with pytest.raises(ValueError) as refused:
        validate_api_key_env(secret)
    message = str(refused.value)
    assert "NAME of an environment variable" in message
    assert secret not in message and secret[4:12] not in message


@pytest.mark.parametrize("name", NAMES)
def test_variable_names_pass(name):
    assert not looks_like_secret(name)
    assert validate_api_key_env(name) == name


def test_a_dollar_sign_and_spaces_around_the_name_are_dropped():
    assert validate_api_key_env("  $OPENAI_API_KEY ") == "OPENAI_API_KEY"
    assert validate_api_key_env("") is None and validate_api_key_env(None) is None


@pytest.mark.parametrize("value", ["MY KEY", "1KEY", "KEY-NAME", "${KEY}"])
def test_what_is_no_variable_name_is_refused(value):
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        validate_api_key_env(value)


@pytest.mark.parametrize(
    "secret", [SECRETS["Hugging Face"], SECRETS["AWS access key id"], SECRETS["mixed case, 16"]]
)
def test_the_store_never_saves_a_key_as_the_variable_name(tmp_path, secret):
    """Every way into the endpoints table (page, import, code) goes through save_endpoint."""
    store = Store(tmp_path / "k.db")
    endpoint = Endpoint(name="leak", base_url="http://x/v1", model="m", api_key_env=secret)
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        store.save_endpoint(endpoint)
    assert store.endpoints() == []
    store.close()
    assert secret.encode() not in (tmp_path / "k.db").read_bytes()


@pytest.mark.parametrize("secret", [SECRETS["AWS access key id"], SECRETS["GitHub"]])
def test_the_cli_refuses_a_key_as_api_key_env(tmp_path, capsys, secret):
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"text": "good"}\n')
    args = ["run", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--task", "sentiment"]
    args += ["--relations", "si.identity", "--inputs", str(inputs), "--db", str(tmp_path / "x.db")]
    assert main([*args, "--api-key-env", secret]) == 2
    err = capsys.readouterr().err
    assert "NAME of an environment variable" in err and secret not in err
    assert not (tmp_path / "x.db").exists()


# ---------------------------------------------------------------- a named key that is not set

UNSET = "MORPHSCOPE_TEST_UNSET_KEY"


@pytest.fixture
def no_key(tmp_path, monkeypatch):
    """The variable is in neither the environment nor a secrets.toml (read from the working
    folder, as the dashboard does)."""
    monkeypatch.delenv(UNSET, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run_args(tmp_path, base_url: str) -> list[str]:
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"text": "The food was good."}\n{"text": "It was cold."}\n')
    return [
        "run", "--endpoint", base_url, "--model", "fake-model", "--task", "sentiment",
        "--relations", "si.identity", "--inputs", str(inputs), "--db", str(tmp_path / "k.db"),
        "--api-key-env", UNSET,
    ]  # fmt: skip


def test_missing_key_names_the_variable_and_never_a_value(no_key, monkeypatch):
    endpoint = Endpoint(name="e", base_url="http://x/v1", model="m", api_key_env=UNSET)
    problem = missing_key(endpoint)
    assert problem is not None and f"${UNSET} is not set" in problem
    assert missing_key(Endpoint(name="e", base_url="http://x/v1", model="m")) is None
    monkeypatch.setenv(UNSET, "sk-set")
    assert missing_key(endpoint) is None


def test_an_unset_api_key_env_stops_the_run_before_any_call(no_key, capsys, fake_server):
    """Before: the run went ahead without a key and without a word (exit 0, every call made)."""
    code = main(_run_args(no_key, fake_server.base_url))
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"${UNSET}" in lines[0]
    assert "not set" in lines[0] and "Traceback" not in err
    assert fake_server.stats.chat_calls == 0 and fake_server.stats.model_listings == 0
    assert not (no_key / "k.db").exists()


def test_an_api_key_env_found_in_secrets_toml_runs(no_key, capsys, fake_server, monkeypatch):
    from app.engine import workspace
    from tests.conftest import BagOfWordsEmbedder

    monkeypatch.setattr(workspace, "default_embedder", BagOfWordsEmbedder)
    (no_key / ".streamlit").mkdir()
    (no_key / ".streamlit" / "secrets.toml").write_text(f'{UNSET} = "sk-from-secrets"\n')
    code = main(_run_args(no_key, fake_server.base_url))
    assert code == 0, capsys.readouterr().err
    assert fake_server.stats.chat_calls > 0


def test_the_preflight_refuses_a_saved_endpoint_whose_key_is_not_set(no_key, fake_server):
    """The check every run goes through (CLI and Probe page alike)."""
    from app.clients import kind_of

    endpoint = Endpoint(
        name="paid", base_url=fake_server.base_url, model="fake-model", api_key_env=UNSET
    )
    problem = kind_of(endpoint).preflight(endpoint)
    assert problem is not None and f"${UNSET}" in problem
    assert fake_server.stats.model_listings == 0


def test_a_key_saved_as_the_variable_name_before_the_rule_is_never_shown(no_key):
    """An endpoint stored by an older version, with a token where the name belongs: its status
    line and the pre-flight say what is wrong without repeating the token, and nothing is
    sent with it."""
    from app.clients import kind_of
    from app.clients.endpoint_settings import key_status

    secret = SECRETS["Hugging Face"]
    endpoint = Endpoint(name="old", base_url="http://127.0.0.1:9/v1", model="m", api_key_env=secret)
    for line in (key_status(endpoint), kind_of(endpoint).preflight(endpoint)):
        assert line and "holds a key" in line and secret not in line
