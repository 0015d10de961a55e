"""Negation of one sentence: add 'not' (with do-support) or take an existing negation away."""

from __future__ import annotations

from relations.english.agreement import finite_verb
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


def _question_start(tokens: list[str], index: int) -> bool:
    return prev_word(tokens, index) is None and "?" in tokens


def negate_sentence(tokens: list[str]) -> list[str] | None:
    """The sentence's tokens with its first verb negated, or its negation taken away.

    None when there is no verb we can negate. ``tokens`` may be changed in place.
    """
    words = [i for i, t in enumerate(tokens) if is_word(t)]
    # An existing negation is taken away: that flips the meaning just as well.
    for i in words:
        lower = norm(tokens[i])
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
    for i in words:
        form = finite_verb(tokens, i)
        if form is None:
            continue
        aux = {"3sg": "does", "past": "did"}.get(form.kind, "do")
        tokens[i] = match_case(tokens[i], f"{aux} not {form.base}")
        return tokens
    return None
