"""The follow-up validity gate: which follow-ups are not worth sending.

A follow-up identical to its source measures nothing (``identical_followup``), unless the relation
asks for that (identity relations measure sampling noise). A follow-up of an invariance relation
that has probably changed the meaning becomes ``invalid_followup: …``:

* every invariance relation we ship (rule-based or prompted) must keep the source's numbers, named
  entities (capitalised words, known first names) and negation words;
* an LLM-prompted rewrite must also carry none of the rewriter's own commentary or our prompt's
  words ("The answer to the question is: …", "This sentence can be rephrased …", "Translate this
  to Spanish …", a pivot language's "Voici …"), stay in English, keep the question a question
  with nothing after it, add no number and drop none written in words, keep each sentiment
  polarity and at least half of its sentiment words (and, unless it is asked to add sentences,
  bring in no new polarity), keep the names that open its sentences, keep a one-line source on
  one line, keep each detail with the clause it belongs to, keep the speaker, add no clause
  about something the source never mentions (unless it is asked to add sentences), and reach
  the relation's embedding similarity floor, as each of the source's clauses must reach
  ``CLAUSE_FLOOR`` somewhere in the rewrite (``relations.english.clauses``);
* a small rewriter's rewrite (the embedded model's, ``small_rewriter``) must also keep the
  source's nouns and adjectives, bring in no new subject, keep each number's word and any
  contrast, and read to that model about as well as its source (``relations.english.
  close_rewrite``).

Both become SKIPs with the reason, counted separately — this is what keeps false positives down.

Pure functions: no store, no network; the similarity function is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation

from relations.base import Expectation, FollowUp, Relation, RelationKind
from relations.english.clauses import (
    CLAUSE_FLOOR,
    added_lines,
    dropped_clause,
    moved_detail,
    new_claim,
)
from relations.english.close_rewrite import SmallRewriter, far_rewrite_reason
from relations.english.lexicon import STOPWORDS
from relations.english.person import person_reason
from relations.english.protect import PROPER_NAMES, negation_count
from relations.english.sentiment_words import polarity_counts
from relations.text_utils import lower_words as _words
from relations.text_utils import normalise_whitespace, split_sentences

Similarity = Callable[[str, str], float]

IDENTICAL = "identical_followup"
# Expectations under which the follow-up must say the same thing as the source.
MEANING_PRESERVING = frozenset(
    {
        Expectation.EQUIVALENT,
        Expectation.AT_LEAST_AS_EXTREME,
        Expectation.ORDER_PRESERVED,
        Expectation.TRANSITIVE,
    }
)
INVALID = "invalid_followup"

# Digits with optional thousands separators and decimals; ".5" too. Not inside words ("H2O").
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)")
_LATEX_THOUSANDS = re.compile(r"\{,\}|\\,|\\!")  # 3{,}000 and 3\,000 are 3000
_WORD = re.compile(r"[^\W\d_][\w'’-]*")

_UNITS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
)  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
NUMBER_WORDS: dict[str, Decimal] = {word: Decimal(i) for i, word in enumerate(_UNITS)}
NUMBER_WORDS |= {word: Decimal(20 + 10 * i) for i, word in enumerate(_TENS)}
NUMBER_WORDS |= {
    "hundred": Decimal(100),
    "thousand": Decimal(1000),
    "million": Decimal(1_000_000),
    "dozen": Decimal(12),
    "half": Decimal("0.5"),
    "twice": Decimal(2),
    "double": Decimal(2),
    "triple": Decimal(3),
}
_NUMBER_WORD = re.compile(
    r"\b(?:(" + "|".join(_TENS) + r")-(" + "|".join(_UNITS[1:10]) + r")|(" + "|".join(NUMBER_WORDS)
    + r"))\b",
    re.I,
)  # fmt: skip

# Capitalised words that are not entities even in mid-sentence ("Question: What …", "Mr. Lee").
_NOT_ENTITIES = frozenset(
    {
        "i", "a", "an", "the", "what", "who", "whom", "whose", "which", "when", "where", "why",
        "how", "if", "in", "on", "at", "for", "and", "but", "or", "is", "are", "was", "were", "do",
        "does", "did", "find", "question", "answer", "problem", "note", "let", "suppose", "given",
        "then", "it", "he", "she", "they", "we", "you", "this", "that", "there", "mr", "mrs", "ms",
        "dr", "prof", "step", "solution",
    }
)  # fmt: skip


def _number_key(token: str) -> Decimal | None:
    try:
        return Decimal(token.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def source_numbers(text: str) -> list[str]:
    """The numbers written with digits in ``text``, as written, without repeats."""
    text = _LATEX_THOUSANDS.sub(",", text)
    seen: dict[Decimal, str] = {}
    for match in _NUMBER.finditer(text):
        key = _number_key(match.group())
        if key is not None and key not in seen:
            seen[key] = match.group()
    return list(seen.values())


def number_values(text: str) -> set[Decimal]:
    """Every number value in ``text``: digits, and number words ("three", "twenty-five")."""
    text = _LATEX_THOUSANDS.sub(",", text)
    values = {key for m in _NUMBER.finditer(text) if (key := _number_key(m.group())) is not None}
    for match in _NUMBER_WORD.finditer(text):
        if match.group(1):
            values.add(NUMBER_WORDS[match.group(1).lower()] + NUMBER_WORDS[match.group(2).lower()])
        else:
            values.add(NUMBER_WORDS[match.group(3).lower()])
    return {value.normalize() for value in values}


def named_entities(text: str) -> list[str]:
    """Capitalised words that do not open a sentence ("Paris", "NASA"), without repeats."""
    entities: dict[str, None] = {}
    for sentence in split_sentences(text):
        for position, match in enumerate(_WORD.finditer(sentence)):
            word = re.sub(r"(?:['’]s|['’-])$", "", match.group())
            if position == 0 or not word[:1].isupper() or word.lower() in _NOT_ENTITIES:
                continue
            entities.setdefault(word)
    return list(entities)


_NOT_OPENING_NAMES = _NOT_ENTITIES | STOPWORDS


def opening_names(text: str) -> list[str]:
    """Names that open a sentence ("Lena is 9 years old."): a capitalised first word that is no
    common English word (WordNet; none without it). ``named_entities`` leaves every opening word
    out, and ``known_names`` knows only our lists' names."""
    from relations.wordnet import is_common_word  # here: NLTK loads on the first rewrite only

    names: dict[str, None] = {}
    for sentence in split_sentences(text):
        match = _WORD.search(sentence)
        word = match.group() if match else ""
        lower = word.lower()
        if not word[:1].isupper() or not word.isalpha() or lower in _NOT_OPENING_NAMES:
            continue
        try:
            if not is_common_word(word):
                names[word] = None
        except RuntimeError:  # WordNet is not installed: only the listed names are known
            return []
    return list(names)


def _mentions(text: str, word: str) -> bool:
    """Whether ``text`` has ``word`` as a whole word (any case)."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.I) is not None


def _opening_names_reason(source: str, followup: str) -> str | None:
    dropped = [name for name in opening_names(source) if not _mentions(followup, name)]
    return f"dropped {', '.join(dropped)}" if dropped else None


def known_names(text: str) -> list[str]:
    """First names, cities, countries, weekdays and months of our lists, anywhere in ``text``."""
    return [w for w in dict.fromkeys(_WORD.findall(text)) if w in PROPER_NAMES]


def dropped_content(source: str, followup: str) -> list[str]:
    """Numbers and named entities of ``source`` that ``followup`` no longer contains."""
    present = number_values(followup)
    dropped = [n for n in source_numbers(source) if _number_key(n) not in present]
    for entity in dict.fromkeys([*known_names(source), *named_entities(source)]):
        if not _mentions(followup, entity):
            dropped.append(entity)
    return dropped


# The rule-based invariance relations we ship whose follow-ups must keep the protected content
# (numbers, entities, negations). Others (word.same_category swaps names on purpose, rrb.* follow
# their benchmark's own definitions, custom relations say so in params) are not checked.
_CHECKED_RULE_FAMILIES = frozenset({"char", "sentence", "ad", "si"})
_CHECKED_RULE_RELATIONS = frozenset(
    {"word.synonym", "word.tense", "word.number", "word.voice", "word.question_form"}
)
# Prompted relations asked to add sentences: new negations and sentiment words may be part of it.
ADDS_SENTENCES = frozenset({"si.expand", "si.contrastive"})
# Prompted relations asked to add a sentence about something new. si.expand is not one of them:
# its elaboration is "clarifying, non-informative" (definitions, restatements), so each clause it
# adds is about something the source mentions.
ADDS_CLAUSES = frozenset({"si.contrastive", "nli.extend_premise", "nli.extend_hypothesis"})
# Prompted relations asked to shorten: a clause that said nothing needed may go.
MAY_DROP_CLAUSES = frozenset({"si.contract"})

# The rewriter talking about its rewrite instead of giving it, or echoing our instructions. The
# back-translation prompts go through French, German, Spanish, Italian and Portuguese, so the
# openers a translation comes wrapped in are listed in those languages too.
_PIVOT_LANGUAGES = r"(?:english|french|german|spanish|italian|portuguese)"
META_COMMENTARY = re.compile(
    r"\bin this (?:example|version|rewrite|paraphrase|translation|text|context)\b"
    r"|\bthe (?:revised|rewritten|paraphrased|expanded|shortened|modified|original|translated) "
    r"(?:sentence|text|version|question|problem|passage|input)\b"
    r"|\bhere(?:'s|’s| is| are)\b"
    r"|\bas an ai\b"
    r"|\bi(?: have|'ve|’ve)? (?:rewritten|paraphrased|expanded|kept|replaced|changed|translated)\b"
    r"|\b(?:is|was|has been|have been) replaced (?:with|by)\b"
    r"|^\s*(?:note|explanation)\s*:"
    # "The answer to the question is: …", "the answer is 12"
    r"|\bthe (?:correct |final )?answer(?: to (?:the|this|your) (?:question|problem))? is\b"
    # "This sentence can be rephrased as …", "The text could be rephrased to: …"
    r"|\b(?:this|the) (?:sentence|text|question|problem|passage|statement) (?:can|could|may|"
    r"might) be "
    r"(?:rephrased|rewritten|paraphrased|translated|expressed|restated|written)\b"
    # "Translate this to Spanish", "Rewrite the text", "Paraphrase the following"
    r"|\b(?:translate|rephrase|paraphrase|rewrite|reword|expand) (?:this|the|it|that|following)\b"
    r"|\btranslat\w* (?:[\w’']+ ){0,4}(?:to|into) " + _PIVOT_LANGUAGES + r"\b"
    r"|\b(?:the )?" + _PIVOT_LANGUAGES + r" (?:translation|version)\b"
    # A label of ours or of the rewriter's: "Rewritten text:", "Paraphrase:", "Translation:"
    r"|\b(?:rewritten|paraphrased|expanded|translated|new|final) (?:text|version|sentence|"
    r"question|problem)\s*:"
    r"|\b(?:paraphrase|translation|rewrite|output|answer|solution)\s*:"
    # "Original: … Rephrased: …", "The text: …": two versions, or a label before the text
    r"|^\W*(?:original|rephrased|reworded|expanded|simplified|the text|text)\s*:"
    # "To summarize, A bag of rice …": a summary announced, not the text rewritten
    r"|^\W*(?:to summari[sz]e|in summary|to sum up)\b"
    # "This sentence uses the adjective …", "A user asks the question: …": about the text
    r"|\bthis (?:sentence|text|passage) (?:uses|describes|says|means|shows|is about)\b"
    r"|\bthe user (?:asks|wants)\b|\ba user asks\b"
    # Our own prompt, echoed
    r"|\breply with the\b|\bpreserve every number\b|\bdo not (?:answer|solve|comment)\b"
    # … our preservation constraint's list, in any order of words around it
    r"|\bnumbers?,\s*quantit(?:y|ies),\s*units?\b"
    r"|\b(?:refuse to answer|add a title|comment on the text)\b"
    r"|\b(?:refine|rephrase|rewrite|reword|expand) the (?:sentence|text) to\b"
    r"|</?text>"
    # Openers and labels of the pivot languages
    r"|\b(?:voici|voilà|hier ist|hier sind|aquí (?:está|tienes)|ecco|aqui está)\b"
    r"|\b(?:traduction|traducción|traduzione|tradução|übersetzung|texte réécrit|"
    r"texto reescrito|umgeschriebener text)\b",
    re.I | re.M,
)
# Words nearly every English sentence has: a follow-up with none of them was not brought back
# into English (a back-translation that stopped at its pivot language).
_ENGLISH_FUNCTION_WORDS = frozenset(
    {
        "the", "a", "an", "is", "are", "was", "were", "be", "of", "to", "and", "in", "on", "at",
        "it", "has", "have", "had", "how", "what", "does", "do", "did", "with", "for", "many",
        "much", "he", "she", "they", "we", "i", "you", "this", "that", "my", "his", "her", "their",
        "by", "from", "not", "so", "but", "or", "if", "each", "after", "then", "will", "can",
    }
)  # fmt: skip
# Words of the worked examples in a small rewriter's prompts ("Mia has 5 pens", "the staff were
# kind and the room was tidy"): a rewrite with two of them that its source lacks has copied the
# examples into the rewrite (SmolLM2-135M does: "… the soup was delicious, but the staff were
# kind.").
EXAMPLE_WORDS = frozenset(
    {
        "mia", "pens", "pen", "pupil", "school", "shop", "staff", "tidy", "kind", "room",
        "hotel", "stayed", "stylos", "stifte", "bolígrafos", "penne", "canetas",
    }
)  # fmt: skip
# Number words a rewrite may bring in without adding a quantity ("no one", "one of them", "take
# half of 1/2" for "halve 1/2", "double-check").
_INCIDENTAL_NUMBER_WORDS = frozenset({"one", "half", "double", "twice", "triple"})
_QUOTES = {'"': '"', "“": "”", "'": "'", "‘": "’", "«": "»"}


def allows_identical(relation: Relation) -> bool:
    return bool(relation.params.get("allow_identical"))


def checks_preservation(relation: Relation) -> bool:
    """Whether the gate requires the follow-up to keep the source's numbers and entities.

    LLM-prompted relations only (rule-based ones are exact by construction), and only those whose
    output should keep the source's meaning: a relation that replaces content on purpose (NLI
    premise weakening, a custom "change the meaning" rewrite) is exempt. ``params`` may force
    either way with ``preserve_content``.
    """
    default = relation.expectation in MEANING_PRESERVING
    if relation.kind != RelationKind.LLM:
        checked = relation.family in _CHECKED_RULE_FAMILIES or relation.id in (
            _CHECKED_RULE_RELATIONS
        )
        default = default and checked
    return bool(relation.params.get("preserve_content", default))


def _quoted_whole(text: str) -> bool:
    stripped = text.strip()
    return len(stripped) > 1 and _QUOTES.get(stripped[0]) == stripped[-1]


def _negation_reason(source: str, followup: str, adds_sentences: bool) -> str | None:
    before, after = negation_count(source), negation_count(followup)
    if before and not after:
        return "negation lost"
    if after and not before and not adds_sentences:
        return "negation added"
    return None


def meta_text(source: str, followup: str) -> str | None:
    """The first piece of rewriter commentary or instruction echo in ``followup`` that the source
    does not have itself, or None."""
    for match in META_COMMENTARY.finditer(followup):
        if not re.search(re.escape(match.group().strip()), source, re.I):
            return match.group().strip()
    return None


def not_english(source: str, followup: str) -> bool:
    """Whether ``followup`` reads as another language while ``source`` reads as English."""
    before, after = _words(source), _words(followup)
    if len(before) < 4 or len(after) < 4:
        return False
    english = [w for w in before if w in _ENGLISH_FUNCTION_WORDS]
    kept = [w for w in after if w in _ENGLISH_FUNCTION_WORDS]
    return len(english) / len(before) >= 0.15 and len(kept) / len(after) < 0.05


def copied_example_words(source: str, followup: str) -> list[str]:
    """Words of our prompts' worked examples that ``followup`` has and ``source`` has not."""
    kept = set(_words(source))
    return list(dict.fromkeys(w for w in _words(followup) if w in EXAMPLE_WORDS and w not in kept))


def question_reason(source: str, followup: str, adds_sentences: bool) -> str | None:
    """A question that became a statement, an answer added after it, or a question made up.

    ``adds_sentences``: the relation is asked to add sentences anywhere (si.contrastive), so
    neither a new question nor a sentence after the source's question is a fault there.
    """
    asked, asks = "?" in source, "?" in followup
    if asked and not asks:
        return "the question became a statement"
    if asks and not asked and not adds_sentences:
        return "a statement became a question"
    if asked and source.rstrip().endswith("?") and not adds_sentences:
        after = followup[followup.rfind("?") + 1 :]
        if _WORD.search(after):
            return f'text added after the question ("{normalise_whitespace(after)[:40]}")'
    return None


def added_numbers(source: str, followup: str) -> list[str]:
    """Number values ``followup`` has and ``source`` has not ("Tom has now 1 of them")."""
    known = number_values(source)
    added = [v for v in number_values(_without_incidental(followup)) if v not in known]
    return [format(value, "f") for value in sorted(added)]


def _without_incidental(text: str) -> str:
    pattern = r"\b(?:" + "|".join(_INCIDENTAL_NUMBER_WORDS) + r")\b"
    return re.sub(pattern, " ", text, flags=re.I)


def sentiment_reason(source: str, followup: str, adds_sentences: bool) -> str | None:
    """A polarity lost or added, or fewer than half of a polarity's sentiment words kept."""
    before, after = polarity_counts(source), polarity_counts(followup)
    for polarity in sorted(before):
        if before[polarity] and not after[polarity]:
            return f"sentiment lost ({polarity})"
        if 2 * after[polarity] < before[polarity]:
            shown = f"{before[polarity]} → {after[polarity]}"
            return f"sentiment words lost ({polarity}: {shown})"
    added = sorted(p for p in after if after[p] and not before[p])
    if added and not adds_sentences:
        return f"sentiment added ({', '.join(added)})"
    return None


def rewrite_reason(
    relation: Relation,
    source: str,
    followup: str,
    *,
    small_rewriter: SmallRewriter | None = None,
) -> str | None:
    """What an LLM rewrite broke (None: nothing we can see): meta-text or an instruction echo,
    another language, a name that opened a sentence, the question, the speaker, added numbers,
    negation, sentiment, clauses; and for a ``small_rewriter``, the closer rule: a word of the
    source gone, a new subject, broken English … (``relations.english.close_rewrite``)."""
    meta = meta_text(source, followup)
    if meta is not None:
        return f'meta-commentary ("{meta}")'
    if _quoted_whole(followup) and not _quoted_whole(source):
        return "the whole answer is quoted"
    if not_english(source, followup):
        return "not in English"
    copied = copied_example_words(source, followup)
    if len(copied) >= 2:
        return f"copied from the prompt's examples ({', '.join(copied[:4])})"
    adds = relation.id in ADDS_SENTENCES
    # In order, and lazily: the first fault is the reason, and the later checks (WordNet
    # lookups, clause analysis) need not run once one is found.
    checks = (
        lambda: _opening_names_reason(source, followup),
        lambda: question_reason(source, followup, relation.id == "si.contrastive"),
        lambda: person_reason(source, followup),
        lambda: _numbers_reason(source, followup),
        lambda: _negation_reason(source, followup, adds),
        lambda: sentiment_reason(source, followup, adds),
        lambda: _clauses_reason(relation, source, followup),
        lambda: (
            _far_reason(relation, source, followup, small_rewriter)
            if small_rewriter is not None
            else None
        ),
    )
    return next((reason for check in checks if (reason := check())), None)


def _clauses_reason(relation: Relation, source: str, followup: str) -> str | None:
    """Lines appended, a detail moved to another clause, or a claim added (see
    ``relations.english.clauses``)."""
    lines = added_lines(source, followup)
    if lines is not None:
        # The count inside the parentheses: the yield table groups reasons by the words before.
        return f"lines added to a one-line source ({lines} lines: a second piece after the text)"
    moved = moved_detail(source, followup)
    if moved is not None:
        mixed = '" and "'.join(moved.between)
        return f'a detail moved ("{moved.into}" mixes "{mixed}")'
    # A custom prompt may ask for anything to be added; ours say what they add.
    if relation.family != "custom" and relation.id not in ADDS_CLAUSES:
        added = new_claim(source, followup, by_sentence=relation.id in ADDS_SENTENCES)
        if added is not None:
            return f'a claim added ("{added}")'
    return None


def _far_reason(
    relation: Relation, source: str, followup: str, small_rewriter: SmallRewriter
) -> str | None:
    # si.expand adds sentences too, but a small rewriter's are held to restating the source.
    adds = relation.id in ADDS_CLAUSES or relation.family == "custom"
    drops = relation.id in MAY_DROP_CLAUSES
    fluency = small_rewriter.fluency
    return far_rewrite_reason(source, followup, adds=adds, drops=drops, fluency=fluency)


def dropped_number_words(source: str, followup: str) -> list[str]:
    """Number values ``source`` has (in words too: "three apples") that ``followup`` has not."""
    kept = number_values(followup)
    dropped = [v for v in number_values(_without_incidental(source)) if v not in kept]
    return [format(value, "f") for value in sorted(dropped)]


def _numbers_reason(source: str, followup: str) -> str | None:
    added = added_numbers(source, followup)
    if added:
        return f"numbers added ({', '.join(added[:5])})"
    dropped = dropped_number_words(source, followup)
    return f"numbers dropped ({', '.join(dropped[:5])})" if dropped else None


def _content_reason(
    relation: Relation,
    source: str,
    followup: str,
    similarity: Similarity | None,
    small_rewriter: SmallRewriter | None = None,
) -> str | None:
    if checks_preservation(relation):
        dropped = dropped_content(source, followup)
        if dropped:
            shown = ", ".join(dropped[:5]) + (", …" if len(dropped) > 5 else "")
            return f"{INVALID}: dropped {shown}"
        if relation.kind == RelationKind.LLM:
            broken = rewrite_reason(relation, source, followup, small_rewriter=small_rewriter)
            if broken:
                return f"{INVALID}: {broken}"
        elif negation_count(source) != negation_count(followup):
            changed = f"{negation_count(source)} → {negation_count(followup)}"
            return f"{INVALID}: negation words changed ({changed})"
    floor = relation.similarity_floor
    if similarity is not None and floor is not None:
        value = float(similarity(source, followup))
        if value < floor:
            return f"{INVALID}: input similarity {value:.2f} < floor {floor:.2f}"
    # The clause check is the floor's, clause by clause: a relation without a floor has neither.
    if (
        similarity is not None
        and floor is not None
        and relation.kind == RelationKind.LLM
        and checks_preservation(relation)
        and relation.id not in MAY_DROP_CLAUSES
    ):
        dropped = dropped_clause(source, followup, similarity)
        if dropped is not None:
            shown = f"{dropped.best:.2f} < {CLAUSE_FLOOR:.2f}"
            return f'{INVALID}: a claim dropped ("{dropped.clause}": best match {shown})'
    return None


def check_followup(
    relation: Relation,
    source_text: str,
    followup_text: str,
    similarity: Similarity | None = None,
    *,
    small_rewriter: SmallRewriter | None = None,
) -> str | None:
    """None when the follow-up text may be sent; otherwise the SKIP reason.

    ``similarity(a, b)`` returns the cosine of the two texts' embeddings; without it the floor
    is not checked. ``small_rewriter``: an LLM rewrite came from a small model (the embedded
    one), and must also stay close to the source's words (``relations.english.close_rewrite``).
    """
    if normalise_whitespace(source_text) == normalise_whitespace(followup_text):
        return None if allows_identical(relation) else IDENTICAL
    return _content_reason(relation, source_text, followup_text, similarity, small_rewriter)


def gate_followup(
    relation: Relation,
    source_fields: Mapping[str, str],
    followup: FollowUp,
    similarity: Similarity | None = None,
    *,
    small_rewriter: SmallRewriter | None = None,
) -> str | None:
    """The gate over a whole follow-up: every changed field is checked against its source
    (``small_rewriter``: see ``check_followup``).

    The source is ``followup.source_fields`` when the relation derived its own source. A follow-up
    whose fields are all unchanged is identical only if it also adds no preamble or companions.
    """
    base = followup.source_fields if followup.source_fields is not None else source_fields
    changed = [
        name
        for name, value in followup.fields.items()
        if normalise_whitespace(value) != normalise_whitespace(base.get(name, ""))
    ]
    if not changed:
        if followup.preamble or followup.companions or allows_identical(relation):
            return None
        return IDENTICAL
    for name in changed:
        source = base.get(name, "")
        if not source.strip():
            continue  # a field the relation added: nothing of the source to lose
        reason = _content_reason(
            relation, source, followup.fields[name], similarity, small_rewriter
        )
        if reason is not None:
            return f"{reason} (in {name})" if len(followup.fields) > 1 else reason
    return None
