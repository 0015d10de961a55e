"""Voice: simple active subject–verb–object sentences ↔ passives with 'by'."""

from __future__ import annotations

from relations.english.lexicon import PREPOSITIONS
from relations.english.phrases import (
    make_phrase,
    parse_phrase,
    phrase_as_object,
    phrase_as_subject,
    simple_sentence,
)
from relations.english.tokens import norm
from relations.english.verbs import (
    BE_FORMS,
    INTRANSITIVE,
    finite_reading,
    has_kind,
    past_participle,
    past_tense,
    third_person,
)


def _tail(tokens: list[str], after_index: int) -> str:
    return "".join(tokens[after_index + 1 :])


def active_to_passive(tokens: list[str]) -> str | None:
    """A simple active sentence in the passive ('X approved Y.' → 'Y was approved by X.'), or None."""
    indices = simple_sentence(tokens)
    if not indices or len(indices) < 3:
        return None
    words = [tokens[i] for i in indices]
    for v in range(1, len(words) - 1):
        form = finite_reading(words[v])
        if form is None or form.base in INTRANSITIVE:
            continue
        if parse_phrase(words, 0, v, subject=True) != v:
            continue
        if form.kind == "base" and not make_phrase(words[:v]).plural:
            continue
        object_end = parse_phrase(words, v + 1, len(words), subject=False)
        if object_end is None:
            return None
        # The object must end the clause (before a preposition, a comma or the end).
        if object_end < len(words) and norm(words[object_end]) not in PREPOSITIONS:
            return None
        if "," in tokens[: indices[object_end - 1]]:
            return None
        subject = make_phrase(words[:v])
        obj = make_phrase(words[v + 1 : object_end])
        tense = "past" if form.kind == "past" else "present"
        if obj.pronoun and norm(obj.words[0]) == "me":
            be = "was" if tense == "past" else "am"
        elif tense == "past":
            be = "were" if obj.plural else "was"
        else:
            be = "are" if obj.plural else "is"
        head = f"{phrase_as_subject(obj)} {be} {past_participle(form.base)} by "
        head += phrase_as_object(subject)
        return head + _tail(tokens, indices[object_end - 1])
    return None


def passive_to_active(tokens: list[str]) -> str | None:
    """A simple passive with 'by' in the active ('Y was approved by X.' → 'X approved Y.'), or None."""
    indices = simple_sentence(tokens)
    if not indices or len(indices) < 5:
        return None
    words = [tokens[i] for i in indices]
    for b in range(1, len(words) - 3):
        be = norm(words[b])
        if be not in BE_FORMS or norm(words[b + 2]) != "by":
            continue
        participle = has_kind(words[b + 1], "participle")
        if participle is None or parse_phrase(words, 0, b, subject=True) != b:
            continue
        agent_end = parse_phrase(words, b + 3, len(words), subject=False)
        if agent_end is None:
            return None
        if agent_end < len(words) and norm(words[agent_end]) not in PREPOSITIONS:
            return None
        patient = make_phrase(words[:b])
        agent = make_phrase(words[b + 3 : agent_end])
        base = participle.base
        if be in {"was", "were"}:
            verb = past_tense(base)
        else:
            subject = "i" if norm(agent.words[0]) in {"i", "me"} else None
            verb = base if subject or agent.plural else third_person(base)
        head = f"{phrase_as_subject(agent)} {verb} {phrase_as_object(patient)}"
        return head + _tail(tokens, indices[agent_end - 1])
    return None
