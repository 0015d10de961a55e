"""Questions: plain statements ↔ yes/no questions (auxiliary inversion and do-support)."""

from __future__ import annotations

from relations.english.agreement import finite_verb
from relations.english.lexicon import (
    ADJECTIVES,
    CONJUNCTIONS,
    DETERMINERS,
    PREPOSITIONS,
    STOPWORDS,
    SUBJECT_PRONOUNS,
)
from relations.english.nouns import is_noun_candidate
from relations.english.phrases import (
    lower_first,
    make_phrase,
    np_word,
    phrase_as_subject,
    simple_sentence,
)
from relations.english.tokens import capitalize_first, norm, word_list
from relations.english.verbs import (
    AUXILIARIES,
    BASE_VERBS,
    DO_FORMS,
    HAVE_FORMS,
    NEGATED,
    conjugate_like,
    is_participle_or_gerund,
    is_verb_form,
)

WH_WORDS = frozenset(word_list("who whom whose what which where when why how"))


def _end_of(tokens: list[str], indices: list[int]) -> tuple[str, str]:
    """The text after the last word: (punctuation, trailing whitespace)."""
    tail = "".join(tokens[indices[-1] + 1 :])
    stripped = tail.rstrip()
    return stripped, tail[len(stripped) :]


def _span(tokens: list[str], indices: list[int], start: int, stop: int) -> str:
    """The original text of words ``start``..``stop - 1``, inner commas and spacing kept."""
    if start >= stop:
        return ""
    return "".join(tokens[indices[start] : indices[stop - 1] + 1])


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def declarative_to_question(tokens: list[str]) -> str | None:
    """A plain statement as a yes/no question ('Sarah works.' → 'Does Sarah work?'), or None."""
    indices = simple_sentence(tokens)
    if not indices or len(indices) < 2:
        return None
    punctuation, space = _end_of(tokens, indices)
    if punctuation not in {"", "."}:
        return None
    words = [tokens[i] for i in indices]
    if norm(words[0]) in WH_WORDS | CONJUNCTIONS | PREPOSITIONS:
        return None
    for v in range(1, min(len(words), 7)):
        lower = norm(words[v])
        if lower in AUXILIARIES or lower in NEGATED:
            nxt = norm(words[v + 1]) if v + 1 < len(words) else ""
            main = ""
            aux = lower
            if lower in HAVE_FORMS and not is_participle_or_gerund(nxt) and nxt != "not":
                # "has" as the main verb: do-support.
                aux, main = {"has": "does", "have": "do", "had": "did"}[lower], "have"
            elif lower in DO_FORMS and nxt not in BASE_VERBS | {"not", "have", "be"}:
                main = "do"
            subject = " ".join(lower_first(words[:v]))
            rest = _span(tokens, indices, v + 1, len(words))
            return _join(capitalize_first(aux), subject, main, rest) + "?" + space
        form = finite_verb(tokens, indices[v])
        if form is not None:
            aux = {"3sg": "does", "past": "did"}.get(form.kind, "do")
            subject = " ".join(lower_first(words[:v]))
            rest = _span(tokens, indices, v + 1, len(words))
            return _join(capitalize_first(aux), subject, form.base, rest) + "?" + space
        if is_verb_form(words[v]) or lower in STOPWORDS - DETERMINERS - PREPOSITIONS:
            return None
        if "," in tokens[: indices[v]]:
            return None
    return None


def _question_subject_end(words: list[str], start: int) -> int | None:
    if start >= len(words):
        return None
    first = norm(words[start])
    if first in SUBJECT_PRONOUNS:
        return start + 1
    if first in DETERMINERS:
        end = start + 1
        while (
            end < len(words)
            and end - start <= 3
            and np_word(words[end])
            and norm(words[end]) not in ADJECTIVES
            and not norm(words[end]).endswith(("ing", "ed"))
        ):
            end += 1
        if end == len(words) and end - start > 2:
            end -= 1  # the last word is the predicate ("Is the food delicious?")
        return end if end > start + 1 else None
    if words[start][:1].isupper() or is_noun_candidate(words[start]):
        end = start + 1
        while end < len(words) and words[end][:1].isupper() and not is_verb_form(words[end]):
            end += 1
        return end
    return None


def question_to_declarative(tokens: list[str]) -> str | None:
    """A yes/no question as a statement ('Does Sarah work?' → 'Sarah works.'), or None."""
    indices = simple_sentence(tokens)
    if not indices or len(indices) < 2:
        return None
    punctuation, space = _end_of(tokens, indices)
    if punctuation != "?":
        return None
    words = [tokens[i] for i in indices]
    aux = norm(words[0])
    if aux not in AUXILIARIES and aux not in NEGATED:
        return None
    end = _question_subject_end(words, 1)
    if end is None or end >= len(words):
        return None
    subject = phrase_as_subject(make_phrase(words[1:end]))
    if aux in DO_FORMS or NEGATED.get(aux) in DO_FORMS:
        do = NEGATED.get(aux, aux)
        verb = norm(words[end])
        if verb not in BASE_VERBS | {"have", "be", "do"}:
            return None
        middle = f"{do} not {verb}" if aux in NEGATED else conjugate_like(verb, do)
        rest = _span(tokens, indices, end + 1, len(words))
    else:
        middle = NEGATED[aux] + " not" if aux in NEGATED else aux
        if aux in {"cannot", "can't"}:
            middle = "cannot"
        rest = _span(tokens, indices, end, len(words))
    return _join(subject, middle, rest) + "." + space
