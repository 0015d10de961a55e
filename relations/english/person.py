"""Who a text speaks as, and of whom: a rewrite must not change the speaker or the person."""

from __future__ import annotations

from relations.text_utils import lower_words as _words

_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "yourselves"})


def person_reason(source: str, followup: str) -> str | None:
    """The speaker changed: the source speaks of itself ("my headphones", "our guide") and the
    rewrite addresses someone else instead ("your headphones"), or no one speaks any more ("The
    app crashes every time I open the camera." → "The app fails to recover from camera
    crashes."): another claim."""
    before, after = _words(source), _words(followup)
    mine = [w for w in before if w in _FIRST_PERSON]
    yours = [w for w in after if w in _SECOND_PERSON and w not in before]
    kept = [w for w in after if w in _FIRST_PERSON]
    speaker = "I" if mine and mine[0] == "i" else mine[0] if mine else ""
    if mine and yours and len(kept) < len(mine):
        return f"the speaker changed ({speaker} → {yours[0]})"
    if mine and not kept:  # "I open the camera" → "camera crashes": whose experience is gone
        return f"the speaker dropped ({speaker})"
    return _pronoun_swap(before, after)


_HE = frozenset({"he", "him", "his", "himself"})
_SHE = frozenset({"she", "her", "hers", "herself"})


def _pronoun_swap(before: list[str], after: list[str]) -> str | None:
    """ "Hugo earns … He works" → "… She works": a source that speaks of a man only (or a woman
    only) and a rewrite that brings in the other."""
    for own, other in ((_HE, _SHE), (_SHE, _HE)):
        said = [w for w in before if w in own]
        if said and not any(w in other for w in before):
            brought = [w for w in after if w in other]
            if brought:
                return f"a pronoun changed ({said[0]} → {brought[0]})"
    return None
