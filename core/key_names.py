"""The one rule for an endpoint's API-key setting: it holds the NAME of an environment variable
(``OPENAI_API_KEY``), never the key itself.

The Endpoints page, the CLI (``--api-key-env``) and the store's ``save_endpoint`` (every way an
endpoint reaches the database) all call ``validate_api_key_env``, so a pasted token is refused
wherever it is entered and is never written anywhere.
"""

from __future__ import annotations

import re

# An environment variable name, as shells accept it.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Vendor key formats: a known prefix, then a run of key characters with at least one digit (a
# random run of 16 or more characters almost always has one; a variable name like
# ``hf_token_name`` has none). Case-sensitive: ``HF_TOKEN`` and ``GSK_KEY`` stay names.
_PREFIXED_KEY = re.compile(
    r"(?:sk|pk|rk|hf|gsk|ghp|gho|ghu|ghs|ghr|github_pat|r8)_(?=[A-Za-z0-9_\-]*[0-9])"
    r"[A-Za-z0-9_\-]{8,}"
    # A dash never appears in a variable name: these prefixes are keys at any length.
    r"|(?:sk|pk|rk|xai|glpat|pplx|nvapi|xox[abposr])-.+"
)
# AWS access key ids (upper case and digits, so the shape of a name otherwise) and Google API keys.
_AWS_KEY_ID = re.compile(r"(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}")
_GOOGLE_KEY = re.compile(r"AIza[0-9A-Za-z_\-]{35}")


def _random_looking(part: str) -> bool:
    """A run of characters that reads like random key material rather than words: long, with
    digits mixed into mixed-case letters (or many digits), or very long in mixed case."""
    lower = sum(c.islower() for c in part if c.isascii())
    upper = sum(c.isupper() for c in part if c.isascii())
    digits = sum(c.isdigit() for c in part if c.isascii())
    mixed_case = bool(lower and upper)
    many_digits = digits >= 4 and lower + upper >= 4
    if len(part) >= 16 and digits and (mixed_case or many_digits):
        return True
    if len(part) >= 20 and digits and lower:  # lower-case hex and base36 tokens
        return True
    return len(part) >= 32 and mixed_case


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` looks like an API key or token rather than a variable name.

    Known vendor prefixes (``sk-``, ``hf_``, ``gsk_``, ``xai-``, ``ghp_``, ``AKIA``…) followed by
    key material, and long high-entropy runs (mixed case with digits, ``MyKey1234abcdEFGH…``).
    Names such as ``OPENAI_API_KEY``, ``HF_TOKEN`` or ``MY_KEY_2`` do not."""
    value = value.strip()
    if _PREFIXED_KEY.fullmatch(value) or _AWS_KEY_ID.fullmatch(value):
        return True
    if _GOOGLE_KEY.fullmatch(value):
        return True
    return any(_random_looking(part) for part in re.split(r"[_\-.:/+=]", value) if part)


# Both messages say what the field takes; neither repeats the value, which may be a key.
LOOKS_LIKE_A_KEY = (
    "that looks like an API key itself: enter the NAME of an environment variable that holds "
    "the key (e.g. OPENAI_API_KEY); keys are never stored"
)
NOT_A_NAME = (
    "the API key setting takes the NAME of an environment variable (letters, digits and _, "
    "e.g. OPENAI_API_KEY), not the key itself"
)


def validate_api_key_env(name: str | None) -> str | None:
    """The NAME of the variable holding the key (None when there is none), or ValueError.

    A leading ``$`` is dropped (``$OPENAI_API_KEY``). Something that looks like a key is refused
    with a message that never repeats it: keys are never stored."""
    name = (name or "").strip()
    if name.startswith("$") and _ENV_NAME.fullmatch(name[1:]):
        name = name[1:]
    if not name:
        return None
    if looks_like_secret(name):
        raise ValueError(LOOKS_LIKE_A_KEY)
    if not _ENV_NAME.fullmatch(name):
        raise ValueError(NOT_A_NAME)
    return name
