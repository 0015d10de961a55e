"""Negation of one sentence: add 'not' (with do-support) or take an existing negation away."""

from __future__ import annotations

from relations.english.agreement import finite_slot, finite_verb
from relations.english.lemmas import unknown_finite_form
from relations.english.tokens import is_word, match_case, next_word, norm, prev_word, remove_tokens
from relations.english.verbs import (
    AUXILIARIES,
    BASE_VERBS,
    BE_FORMS,
    CONTRACT,
    DO_FORMS,
    HAVE_FORMS,
    MODALS,
    NEGATED,
    conjugate_like,
    is_participle_or_gerund,
)

_WH_WORDS = frozenset(["why", "what", "where", "when", "how", "who", "which", "whom", "whose"])
# Words that already negate a clause: a second negation ("John never does not eat") breaks it.
NEGATORS = frozenset(
    [
        "no",
        "nobody",
        "nothing",
        "none",
        "nowhere",
        "neither",
        "nor",
        "hardly",
        "rarely",
        "seldom",
        "scarcely",
        "barely",
    ]
)


def _question_start(tokens: list[str], index: int) -> bool:
    """An auxiliary that opens a question, alone or after a wh-word ("Why did the bridge …?")."""
    if "?" not in tokens:
        return False
    before = prev_word(tokens, index)
    return before is None or (
        norm(tokens[before]) in _WH_WORDS and prev_word(tokens, before) is None
    )


def negate_sentence(tokens: list[str]) -> list[str] | None:
    """The sentence's tokens with its first verb negated, or its negation taken away.

    None when there is no verb we can negate. ``tokens`` may be changed in place.
    """
    words = [i for i, t in enumerate(tokens) if is_word(t)]
    if any(norm(tokens[i]) in NEGATORS for i in words):
        return None  # a second negation would break the sentence
    # An existing negation is taken away: that flips the meaning just as well.
    for i in words:
        lower = norm(tokens[i])
        if lower == "never":  # "John never eats meat." → "John eats meat."
            return remove_tokens(tokens, [i])
        if lower in NEGATED:
            aux = NEGATED[lower]
            following = next_word(tokens, i)
            if (
                aux in DO_FORMS
                and following is not None
                and norm(tokens[following]) in (BASE_VERBS | {"have", "be", "do"})
            ):
                verb = norm(tokens[following])
                tokens[following] = match_case(tokens[i], conjugate_like(verb, aux))
                return remove_tokens(tokens, [i])
            tokens[i] = match_case(tokens[i], aux)
            return tokens
        if lower == "not":
            before = prev_word(tokens, i)
            if before is not None and norm(tokens[before]) in AUXILIARIES:
                following = next_word(tokens, i)
                aux = norm(tokens[before])
                if (
                    aux in DO_FORMS
                    and following is not None
                    and norm(tokens[following]) in (BASE_VERBS | {"have", "be", "do"})
                ):
                    verb = norm(tokens[following])
                    tokens[following] = match_case(tokens[before], conjugate_like(verb, aux))
                    return remove_tokens(tokens, [before, i])
                return remove_tokens(tokens, [i])
    # Otherwise negate the first auxiliary, be or modal …
    for i in words:
        lower = norm(tokens[i])
        following = next_word(tokens, i)
        if _question_start(tokens, i) and lower in AUXILIARIES:
            # An inverted question: "Did she call?" → "Didn't she call?"
            if lower not in CONTRACT:
                return None
            tokens[i] = match_case(tokens[i], CONTRACT[lower])
            return tokens
        if (
            lower in BE_FORMS
            or lower in MODALS
            or (
                lower in HAVE_FORMS
                and following is not None
                and is_participle_or_gerund(tokens[following])
            )
            or (
                lower in DO_FORMS
                and following is not None
                and norm(tokens[following]) in BASE_VERBS | {"have", "be"}
            )
        ):
            tokens[i] = match_case(tokens[i], "cannot" if lower == "can" else lower + " not")
            return tokens
        if lower in HAVE_FORMS | DO_FORMS and prev_word(tokens, i) is not None:
            # "has" / "does" as the main verb: do-support.
            base = "have" if lower in HAVE_FORMS else "do"
            aux = {"has": "does", "have": "do", "had": "did", "does": "does", "do": "do"}.get(
                lower, "did"
            )
            tokens[i] = match_case(tokens[i], f"{aux} not {base}")
            return tokens
    # … or the first main verb, with do-support.
    return _negate_main_verb(tokens, words)


# Adverbs of degree or stance that stay before the negation ("I absolutely do not love it");
# other -ly adverbs tell how, and go after it ("did not quickly examine").
_BEFORE_NEGATION = frozenset(
    [
        "absolutely",
        "really",
        "truly",
        "certainly",
        "definitely",
        "probably",
        "simply",
        "actually",
        "totally",
        "completely",
        "generally",
        "normally",
    ]
)


def _negate_main_verb(tokens: list[str], words: list[int]) -> list[str] | None:
    """The first finite main verb negated with do-support: one of our lexicon, or one outside
    it that stands where a finite verb would ("The company hired …" → "did not hire")."""
    for i in words:
        form = finite_verb(tokens, i)
        if form is not None:
            base, kind = form.base, form.kind
        elif norm(tokens[i]) not in AUXILIARIES and finite_slot(tokens, i):
            unknown = unknown_finite_form(norm(tokens[i]))
            if unknown is None:
                continue
            base, kind = unknown
        else:
            continue
        aux = {"3sg": "does", "past": "did"}.get(kind, "do")
        before = prev_word(tokens, i)
        adverb = norm(tokens[before]) if before is not None else ""
        if adverb.endswith("ly") and adverb not in _BEFORE_NEGATION:
            tokens[i] = match_case(tokens[i], base)
            tokens[before] = match_case(tokens[before], f"{aux} not {adverb}")
            return tokens
        tokens[i] = match_case(tokens[i], f"{aux} not {base}")
        return tokens
    return None
