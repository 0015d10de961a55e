"""Verb forms: our verb lexicon (regular verbs inflected by rule, irregular ones listed) and
auxiliaries, with the inflections every grammar rule uses."""

from __future__ import annotations

import re
from dataclasses import dataclass

from relations.english.tokens import norm, word_list

# Regular verbs, inflected by rule; those that double their last consonant are listed apart.
REGULAR_VERBS = word_list(
    """
    accept add admire admit agree allow answer approve arrive ask attack bake ban bark beg
    believe borrow call carry cause change chase chat clean climb close collect commit complete
    cook count create cry dance decide deliver describe design destroy develop discover drop
    enjoy enter expect explain fail fill finish fix follow grab help hope hug hunt improve
    include invite join jog jump kick kill kiss laugh learn like listen live look love manage
    marry miss move need notice offer open order own paint pass pick plan plant play prefer
    prepare print produce promise protect pull push reach receive remember repair reply report
    rescue return rob save score serve share shop smile solve start stay stop study support
    surprise talk taste thank touch train travel treat trust try turn use visit wait walk want
    warn wash watch wish work worry
    """
)
DOUBLING_VERBS = frozenset(
    word_list("admit ban beg chat commit drop grab hug jog plan prefer rob shop stop")
)
# base past participle — our list of common irregular verbs (be, have and do are handled apart).
IRREGULAR_VERBS = {
    base: (past, participle)
    for base, past, participle in (
        line.split()
        for line in """
        become became become
        begin began begun
        bite bit bitten
        blow blew blown
        break broke broken
        bring brought brought
        build built built
        buy bought bought
        catch caught caught
        choose chose chosen
        come came come
        cut cut cut
        draw drew drawn
        drink drank drunk
        drive drove driven
        eat ate eaten
        fall fell fallen
        feed fed fed
        feel felt felt
        fight fought fought
        find found found
        fly flew flown
        forget forgot forgotten
        freeze froze frozen
        get got got
        give gave given
        go went gone
        grow grew grown
        hear heard heard
        hide hid hidden
        hit hit hit
        hold held held
        hurt hurt hurt
        keep kept kept
        know knew known
        lead led led
        leave left left
        lend lent lent
        lose lost lost
        make made made
        mean meant meant
        meet met met
        pay paid paid
        put put put
        read read read
        ride rode ridden
        ring rang rung
        rise rose risen
        run ran run
        say said said
        see saw seen
        sell sold sold
        send sent sent
        set set set
        shake shook shaken
        shut shut shut
        sing sang sung
        sit sat sat
        sleep slept slept
        speak spoke spoken
        spend spent spent
        stand stood stood
        steal stole stolen
        swim swam swum
        take took taken
        teach taught taught
        tell told told
        think thought thought
        throw threw thrown
        understand understood understood
        wake woke woken
        wear wore worn
        win won won
        write wrote written
        """.strip().splitlines()
    )
}
# Verbs that take no direct object here, so "X <verb> Y" is never turned into the passive.
INTRANSITIVE = frozenset(
    word_list("arrive become come fall go laugh live rise run sit sleep smile stand stay swim wait")
)


def third_person(base: str) -> str:
    """The third-person singular present of a verb: 'go' → 'goes', 'carry' → 'carries'."""
    if base in {"go", "do"}:
        return base + "es"
    if base == "have":
        return "has"
    if re.search(r"(s|sh|ch|x|z)$", base):
        return base + "es"
    if re.search(r"[^aeiou]y$", base):
        return base[:-1] + "ies"
    return base + "s"


def past_tense(base: str) -> str:
    """The simple past of a verb: irregular ones from our list, the others by rule."""
    if base in IRREGULAR_VERBS:
        return IRREGULAR_VERBS[base][0]
    if base == "have":
        return "had"
    if base == "do":
        return "did"
    if base.endswith("e"):
        return base + "d"
    if re.search(r"[^aeiou]y$", base):
        return base[:-1] + "ied"
    if base in DOUBLING_VERBS:
        return base + base[-1] + "ed"
    return base + "ed"


def past_participle(base: str) -> str:
    """The past participle of a verb: irregular ones from our list, the others by rule."""
    if base in IRREGULAR_VERBS:
        return IRREGULAR_VERBS[base][1]
    return {"have": "had", "do": "done"}.get(base, past_tense(base))


@dataclass(frozen=True)
class VerbForm:
    """What a surface form of a lexicon verb can be."""

    base: str
    kind: str  # "base", "3sg", "past", "participle"


def _build_forms() -> dict[str, list[VerbForm]]:
    forms: dict[str, list[VerbForm]] = {}
    for base in [*REGULAR_VERBS, *IRREGULAR_VERBS]:
        for kind, form in (
            ("base", base),
            ("3sg", third_person(base)),
            ("past", past_tense(base)),
            ("participle", past_participle(base)),
        ):
            entry = VerbForm(base, kind)
            if entry not in forms.setdefault(form, []):
                forms[form].append(entry)
    return forms


VERB_FORMS = _build_forms()
BASE_VERBS = frozenset([*REGULAR_VERBS, *IRREGULAR_VERBS])
BE_FORMS = frozenset(["am", "is", "are", "was", "were"])
HAVE_FORMS = frozenset(["has", "have", "had"])
DO_FORMS = frozenset(["do", "does", "did"])
MODALS = frozenset(word_list("can could will would shall should may might must"))
AUXILIARIES = BE_FORMS | HAVE_FORMS | DO_FORMS | MODALS
NEGATED = {
    "isn't": "is",
    "aren't": "are",
    "wasn't": "was",
    "weren't": "were",
    "don't": "do",
    "doesn't": "does",
    "didn't": "did",
    "hasn't": "has",
    "haven't": "have",
    "hadn't": "had",
    "can't": "can",
    "cannot": "can",
    "won't": "will",
    "wouldn't": "would",
    "couldn't": "could",
    "shouldn't": "should",
    "mustn't": "must",
    "mightn't": "might",
}
CONTRACT = {aux: neg for neg, aux in NEGATED.items() if neg != "cannot"}


def forms_of(word: str) -> list[VerbForm]:
    """Every lexicon reading of a surface form (a form may be, say, both past and participle)."""
    return VERB_FORMS.get(norm(word), [])


def has_kind(word: str, *kinds: str) -> VerbForm | None:
    """The lexicon reading of ``word`` with one of ``kinds``, if any."""
    for form in forms_of(word):
        if form.kind in kinds:
            return form
    return None


def finite_reading(word: str) -> VerbForm | None:
    """The most likely finite reading of a lexicon verb form: 3sg, then past, then base."""
    for kind in ("3sg", "past", "base"):
        if (form := has_kind(word, kind)) is not None:
            return form
    return None


def is_verb_form(word: str) -> bool:
    """Whether ``word`` is a known verb form, an auxiliary or a negated auxiliary."""
    return bool(forms_of(word)) or norm(word) in AUXILIARIES or norm(word) in NEGATED


def is_participle_or_gerund(word: str) -> bool:
    """Whether ``word`` is 'been', an -ing form or a known past participle."""
    lower = norm(word)
    return lower == "been" or lower.endswith("ing") or has_kind(lower, "participle") is not None


def conjugate_like(base: str, aux: str) -> str:
    """The verb form do-support stood for: does+go → goes, did+go → went, do+go → go."""
    if base == "be":
        return {"does": "is", "did": "was"}.get(aux, "are")
    if aux == "does":
        return third_person(base)
    if aux == "did":
        return past_tense(base)
    return base
