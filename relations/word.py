"""Word-level relations (LLMorph parity 8, 9, 10, 25, 34, 57, 136, 137, 149, 152, 155).

Rule-based English, no part-of-speech tagger (NLTK's tagger data cannot be installed here):
our own small lexicon of common verbs (regular ones inflected by rule, irregular ones listed),
our own word lists, and WordNet (``relations.wordnet``) for synonyms and antonyms. The grammar
rules are best effort for plain sentences; a transformation that finds nothing it can change
raises ``NotApplicable`` (a SKIP with the reason), never returns its input unchanged.

All randomness comes from ``ctx.rng``. Letters inside math spans and LaTeX commands are left
alone (see ``relations.char.protected_mask``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.tasks import BUILTIN_TASKS
from relations.base import Expectation, NotApplicable, RelationKind, TransformContext
from relations.char import protected_mask
from relations.registry import transform_relation

CATEGORY = "word"


def _words(text: str) -> list[str]:
    return text.split()


# ---------------------------------------------------------------- tokens

# Words (with inner apostrophes: don't, Sarah's), numbers, whitespace runs, any other character.
_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*|\d+(?:[.,]\d+)*|\s+|.", re.DOTALL)
_SENTENCE_END = frozenset(".!?")


def tokenize(text: str) -> list[str]:
    """Split into tokens whose concatenation is exactly ``text``."""
    return _TOKEN.findall(text)


def is_word(token: str) -> bool:
    return token[:1].isalpha()


def norm(token: str) -> str:
    """Lower case with a straight apostrophe: the form every lookup uses."""
    return token.lower().replace("’", "'")


def match_case(template: str, word: str) -> str:
    """``word`` written in the case of ``template`` (UPPER, Capitalised or as given)."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def capitalize_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def split_sentences(tokens: list[str]) -> list[list[str]]:
    """Sentences as token lists (end punctuation and the following whitespace included).

    A sentence ends at ``.``, ``!`` or ``?`` followed by whitespace or the end of the text, so
    "3.5" does not split.
    """
    sentences: list[list[str]] = []
    current: list[str] = []
    index = 0
    while index < len(tokens):
        current.append(tokens[index])
        if tokens[index] in _SENTENCE_END and (
            index + 1 == len(tokens) or tokens[index + 1].isspace()
        ):
            if index + 1 < len(tokens):
                index += 1
                current.append(tokens[index])
            sentences.append(current)
            current = []
        index += 1
    if current:
        sentences.append(current)
    return sentences


def protected_tokens(text: str, tokens: list[str]) -> set[int]:
    """Indices of tokens that overlap a math span or a LaTeX command."""
    mask = protected_mask(text)
    protected = set()
    position = 0
    for index, token in enumerate(tokens):
        if any(mask[position : position + len(token)]):
            protected.add(index)
        position += len(token)
    return protected


def next_word(tokens: list[str], index: int) -> int | None:
    """The next word token, skipping only whitespace."""
    for j in range(index + 1, len(tokens)):
        if tokens[j].isspace():
            continue
        return j if is_word(tokens[j]) else None
    return None


def prev_word(tokens: list[str], index: int) -> int | None:
    """The previous word token, skipping only whitespace."""
    for j in range(index - 1, -1, -1):
        if tokens[j].isspace():
            continue
        return j if is_word(tokens[j]) else None
    return None


# ---------------------------------------------------------------- our small English lexicon

STOPWORDS = frozenset(
    _words(
        """
        a an the this that these those some any each every no none all both either neither
        i me my mine you your yours he him his she her hers it its we us our ours they them
        their theirs who whom whose which what where when why how there here then than so too
        very just only also not nor never and or but if because as while until unless although
        though of at by for with about against between into through during before after above
        below to from up down in out on off over under again once upon within without onto
        across along around behind beyond near among am is are was were be been being have has
        had do does did will would shall should can could may might must more most other
        another same own few many much several one something anything nothing everything
        someone anyone everyone yes yesterday today tomorrow tonight now later ago home
        """
    )
)
DETERMINERS = frozenset(
    _words("a an the this that these those my your his her its our their some every each")
)
PREPOSITIONS = frozenset(
    _words(
        "of at by for with about against between into through during before after above below "
        "to from up down in out on off over under within without onto across along around "
        "behind beyond near among since until like"
    )
)
CONJUNCTIONS = frozenset(_words("and or but nor so yet because although though while if"))
ADVERBS = frozenset(
    _words("also always never often still just really usually sometimes already even only soon")
)
ADJECTIVES = frozenset(
    _words(
        """
        big small large little old new young good bad great long short high low happy sad hot
        cold warm cool nice fine best better worst fresh clean dirty early late easy hard heavy
        light dark bright quiet loud strong weak rich poor beautiful ugly cheap expensive empty
        full fast slow tall huge tiny famous angry busy calm brave clever kind lazy proud safe
        dangerous delicious wonderful terrible important difficult simple free local main whole
        public private real true wrong right special red blue green yellow purple pink brown
        black white grey gray golden first last next favourite favorite open ready available
        """
    )
)

SUBJECT_TO_OBJECT = {"i": "me", "he": "him", "she": "her", "we": "us", "they": "them"}
OBJECT_TO_SUBJECT = {v: k for k, v in SUBJECT_TO_OBJECT.items()}
SUBJECT_PRONOUNS = frozenset(["i", "you", "he", "she", "it", "we", "they"])
OBJECT_PRONOUNS = frozenset(["me", "you", "him", "her", "it", "us", "them"])
PLURAL_PRONOUNS = frozenset(["you", "we", "they", "us", "them"])

# Regular verbs, inflected by rule; those that double their last consonant are listed apart.
REGULAR_VERBS = _words(
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
    _words("admit ban beg chat commit drop grab hug jog plan prefer rob shop stop")
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
    _words("arrive become come fall go laugh live rise run sit sleep smile stand stay swim wait")
)


def third_person(base: str) -> str:
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
MODALS = frozenset(_words("can could will would shall should may might must"))
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
    return bool(forms_of(word)) or norm(word) in AUXILIARIES or norm(word) in NEGATED


# ---------------------------------------------------------------- nouns: number

IRREGULAR_PLURALS = {
    "man": "men",
    "woman": "women",
    "child": "children",
    "person": "people",
    "mouse": "mice",
    "foot": "feet",
    "tooth": "teeth",
    "goose": "geese",
    "knife": "knives",
    "wife": "wives",
    "life": "lives",
    "leaf": "leaves",
    "wolf": "wolves",
    "half": "halves",
    "shelf": "shelves",
    "thief": "thieves",
    "loaf": "loaves",
    "potato": "potatoes",
    "mango": "mangoes",
    "tomato": "tomatoes",
    "hero": "heroes",
}
SINGULAR_OF = {plural: singular for singular, plural in IRREGULAR_PLURALS.items()}
# Uncountable or invariant nouns: their number is not changed.
INVARIANT_NOUNS = frozenset(
    _words(
        """
        sheep fish deer series species news information water money rice advice furniture
        luggage equipment music homework weather bread milk traffic research knowledge evidence
        """
    )
)


def pluralize(noun: str) -> str:
    lower = noun.lower()
    if lower in IRREGULAR_PLURALS:
        return match_case(noun, IRREGULAR_PLURALS[lower])
    if re.search(r"(s|sh|ch|x|z)$", lower):
        return noun + "es"
    if re.search(r"[^aeiou]y$", lower):
        return noun[:-1] + "ies"
    return noun + "s"


def singularize(noun: str) -> str:
    lower = noun.lower()
    if lower in SINGULAR_OF:
        return match_case(noun, SINGULAR_OF[lower])
    if lower.endswith("ies") and len(lower) > 4:
        return noun[:-3] + "y"
    if re.search(r"(ss|sh|ch|x|z)es$", lower):
        return noun[:-2]
    if lower.endswith("s") and not re.search(r"(ss|us|is)$", lower):
        return noun[:-1]
    return noun


def is_plural_noun(word: str) -> bool:
    lower = norm(word)
    if lower in SINGULAR_OF or lower in PLURAL_PRONOUNS:
        return True
    if lower in INVARIANT_NOUNS or lower in STOPWORDS or lower in {"his", "its", "this", "us"}:
        return False
    return singularize(lower) != lower


def is_noun_candidate(word: str) -> bool:
    """Could be a noun: alphabetic, not a function word, adjective, adverb or known verb form."""
    lower = norm(word)
    return (
        lower.isalpha()
        and lower not in STOPWORDS
        and lower not in ADJECTIVES
        and not lower.endswith("ly")
        and not is_verb_form(lower)
    )


# ---------------------------------------------------------------- shared choices


def rate_count(eligible: int, ctx: TransformContext, default: float) -> int:
    rate = float(ctx.params.get("rate", default))
    return min(eligible, max(1, round(rate * eligible)))


def entity_words(ctx: TransformContext) -> set[str]:
    """Words of the head/tail entities (relation extraction), which must survive in the text."""
    if ctx.task_id != "relation_extraction":
        return set()
    words: set[str] = set()
    for name, value in ctx.sample_fields.items():
        if name != ctx.field:
            words.update(norm(t) for t in tokenize(value) if is_word(t))
    return words


def content_word_indices(text: str, tokens: list[str], ctx: TransformContext) -> list[int]:
    """Indices of content words: 3+ letters, not function words, not math, not RE entities."""
    protected = protected_tokens(text, tokens)
    entities = entity_words(ctx)
    return [
        i
        for i, token in enumerate(tokens)
        if is_word(token)
        and i not in protected
        and len(token) >= 3
        and norm(token) not in STOPWORDS
        and norm(token) not in NEGATED
        and norm(token) not in entities
    ]


# Our neutral filler words (concrete nouns, no sentiment, no negation, no numbers).
RANDOM_WORDS = _words(
    """
    lantern pebble meadow violin ribbon kettle harbor compass blanket ladder orchard saddle
    chimney parcel puzzle magnet feather tunnel basket candle marble helmet pillow anchor bucket
    carpet ginger jacket mirror napkin pencil planet quilt rocket spoon tablet timber umbrella
    velvet wagon yogurt zipper canyon button cabin island pepper lumber cotton copper barrel
    bottle
    """
)


def remove_tokens(tokens: list[str], indices: Iterable[int]) -> list[str]:
    """Drop word tokens with the whitespace before them (or after, at the start of a text)."""
    drop = set(indices)
    result: list[str] = []
    skip_space = False
    for index, token in enumerate(tokens):
        if index in drop:
            if result and result[-1].isspace():
                result.pop()
                skip_space = False
            else:
                skip_space = True
            continue
        if skip_space and token.isspace():
            skip_space = False
            continue
        skip_space = False
        result.append(token)
    return result


def _changed(text: str, new_text: str, reason: str) -> str:
    if new_text == text:
        raise NotApplicable(reason)
    return new_text


# ---------------------------------------------------------------- 8: synonyms (WordNet)


def _wordnet_pos(word: str) -> str | None:
    from relations.wordnet import pos_candidates

    candidates = pos_candidates(word)
    return candidates[0] if candidates else None


def _single_words(options: Iterable[str], word: str) -> list[str]:
    return sorted(
        {o for o in options if re.fullmatch(r"[a-z]+(?:-[a-z]+)?", o) and o.lower() != word.lower()}
    )


def synonym_options(word: str) -> list[str]:
    """Single-word WordNet synonyms of ``word`` in its most frequent part of speech and sense."""
    from relations.wordnet import is_lemma, synonyms

    pos = _wordnet_pos(word)
    if pos is None or not is_lemma(word, pos):
        return []  # an inflected form: its lemma's synonyms would not fit the sentence
    # Only the most frequent sense: later senses drift ("good" → "full").
    return _single_words(synonyms(word, pos, senses=1), word)


@transform_relation(
    id="word.synonym",
    name="Synonym replacement (WordNet)",
    category=CATEGORY,
    description=(
        "Replaces 30% of the content words that have one (at least one) with a WordNet synonym "
        "from their most frequent sense. Inflected words are left alone. The answer should not "
        "change."
    ),
    example="The quick student answered the difficult question correctly.",
    kind=RelationKind.LIBRARY,
    expectation=Expectation.EQUIVALENT,
    preconditions="a content word in its dictionary form with a WordNet synonym",
    ref="LLMorph 8",
    requires=("wordnet",),
    params={"rate": 0.3},
)
def synonym(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    options = {
        i: found
        for i in content_word_indices(text, tokens, ctx)
        if (found := synonym_options(tokens[i]))
    }
    if not options:
        raise NotApplicable("no word with a WordNet synonym")
    chosen = ctx.rng.sample(sorted(options), rate_count(len(options), ctx, 0.3))
    for index in sorted(chosen):
        tokens[index] = match_case(tokens[index], ctx.rng.choice(options[index]))
    return _changed(text, "".join(tokens), "no word with a WordNet synonym")


# ---------------------------------------------------------------- 9: insert random words


@transform_relation(
    id="word.insert_random",
    name="Insert random words",
    category=CATEGORY,
    description=(
        "Inserts a random neutral noun from our own list after 10% of the words (at least one). "
        "The answer should not change."
    ),
    example="The museum closes early on public holidays.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="the text has at least one word outside math",
    ref="LLMorph 9",
    params={"rate": 0.1},
)
def insert_random(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    positions = [i for i, t in enumerate(tokens) if is_word(t) and i not in protected]
    if not positions:
        raise NotApplicable("no word to insert after")
    chosen = set(ctx.rng.sample(positions, rate_count(len(positions), ctx, 0.1)))
    pieces = []
    for index, token in enumerate(tokens):
        pieces.append(token)
        if index in chosen:
            pieces.append(" " + ctx.rng.choice(RANDOM_WORDS))
    return "".join(pieces)


# ---------------------------------------------------------------- 10: antonym (WordNet)


def antonym_options(word: str) -> tuple[str, list[str]] | None:
    """(part of speech, single-word WordNet antonyms) for an adjective, adverb or verb lemma."""
    from relations.wordnet import antonyms, is_lemma

    pos = _wordnet_pos(word)
    if pos not in {"a", "r", "v"} or not is_lemma(word, pos):
        return None
    # The antonyms of the most frequent sense that has any ("good" → "bad", not "evil").
    for senses in range(1, 4):
        options = _single_words(antonyms(word, pos, senses=senses), word)
        if options:
            return pos, options
    return None


@transform_relation(
    id="word.antonym",
    name="Antonym replacement (WordNet)",
    category=CATEGORY,
    description=(
        "Replaces one word with a WordNet antonym (adjectives first, then adverbs, then verbs; "
        "dictionary forms only): 'hot' → 'cold'. The answer should change."
    ),
    example="The soup was hot and the bread tasted fresh.",
    kind=RelationKind.LIBRARY,
    expectation=Expectation.DIFFERENT,
    preconditions="an adjective, adverb or verb in its dictionary form with a WordNet antonym",
    ref="LLMorph 10",
    requires=("wordnet",),
)
def antonym(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    found = {
        i: options
        for i in content_word_indices(text, tokens, ctx)
        if (options := antonym_options(tokens[i]))
    }
    if not found:
        raise NotApplicable("no word with a WordNet antonym")
    for pos in ("a", "r", "v"):  # one flip, on the word most likely to carry the meaning
        candidates = sorted(i for i, (p, _) in found.items() if p == pos)
        if candidates:
            index = ctx.rng.choice(candidates)
            tokens[index] = match_case(tokens[index], ctx.rng.choice(found[index][1]))
            break
    return _changed(text, "".join(tokens), "no word with a WordNet antonym")


# ---------------------------------------------------------------- 25 / 34: keywords


@transform_relation(
    id="word.replace_keywords",
    name="Replace keywords with random words",
    category=CATEGORY,
    description=(
        "Replaces half of the content words (at least one) with random nouns from our own list. "
        "In relation extraction the two entities are kept. The answer should change."
    ),
    example="Maria repaired the old bicycle in her garage.",
    kind=RelationKind.RULE,
    expectation=Expectation.DIFFERENT,
    preconditions="a content word (3+ letters, not a function word or an RE entity)",
    ref="LLMorph 25",
    params={"rate": 0.5},
)
def replace_keywords(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    candidates = content_word_indices(text, tokens, ctx)
    if not candidates:
        raise NotApplicable("no content word to replace")
    chosen = ctx.rng.sample(candidates, rate_count(len(candidates), ctx, 0.5))
    for index in sorted(chosen):
        options = [w for w in RANDOM_WORDS if w != norm(tokens[index])]
        tokens[index] = match_case(tokens[index], ctx.rng.choice(options))
    return "".join(tokens)


@transform_relation(
    id="word.remove_keywords",
    name="Remove keywords",
    category=CATEGORY,
    description=(
        "Deletes half of the content words (at least one) with their spacing. In relation "
        "extraction the two entities are kept. The answer should change."
    ),
    example="Maria repaired the old bicycle in her garage.",
    kind=RelationKind.RULE,
    expectation=Expectation.DIFFERENT,
    preconditions="a content word (3+ letters, not a function word or an RE entity)",
    ref="LLMorph 34",
    params={"rate": 0.5},
)
def remove_keywords(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    candidates = content_word_indices(text, tokens, ctx)
    if not candidates:
        raise NotApplicable("no content word to remove")
    chosen = set(ctx.rng.sample(candidates, rate_count(len(candidates), ctx, 0.5)))
    for index in sorted(chosen):
        if tokens[index][:1].isupper() and _starts_sentence(tokens, index):
            # The next surviving word now starts the sentence.
            following = next_word(tokens, index)
            while following is not None and following in chosen:
                following = next_word(tokens, following)
            if following is not None:
                tokens[following] = capitalize_first(tokens[following])
    return "".join(remove_tokens(tokens, chosen))


def _starts_sentence(tokens: list[str], index: int) -> bool:
    for j in range(index - 1, -1, -1):
        if not tokens[j].isspace():
            return tokens[j] in _SENTENCE_END
    return True


# ---------------------------------------------------------------- 137: same category

# Our own category lists. Names are split by usual gender so pronouns still agree.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "female_name": tuple(
        _words(
            "Alice Emma Olivia Sophia Mia Grace Chloe Lucy Hannah Zoe Maria Sarah Laura Nina "
            "Julia Rosa Anna Clara Ella Ruth"
        )
    ),
    "male_name": tuple(
        _words(
            "James Oliver Liam Noah Lucas Henry Jack Leo Samuel Daniel Tom Peter Mark David "
            "Paul Carlos Omar Ivan Hugo Felix"
        )
    ),
    "city": tuple(
        _words(
            "Paris London Berlin Madrid Rome Tokyo Toronto Sydney Cairo Lisbon Vienna Dublin "
            "Oslo Seoul Lima Nairobi Chicago Boston Mumbai Prague"
        )
    ),
    "country": tuple(
        _words(
            "France Germany Spain Italy Japan Canada Brazil Kenya Egypt Norway Sweden Mexico "
            "India Chile Peru Ireland Portugal Greece Poland Vietnam"
        )
    ),
    "weekday": tuple(_words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")),
    # "May" is left out: it is also a modal verb.
    "month": tuple(
        _words("January February March April June July August September October November December")
    ),
    "colour": tuple(_words("red blue green yellow purple pink brown grey")),
    "animal": tuple(_words("dog cat horse rabbit cow goat pig duck lion tiger bear fox")),
    "fruit": tuple(_words("apple banana pear peach plum mango lemon grape melon cherry")),
    "vehicle": tuple(_words("car bus truck train bicycle van boat ship")),
    "instrument": tuple(_words("piano guitar violin flute drum trumpet cello")),
    "occupation": tuple(
        _words(
            "teacher doctor nurse lawyer farmer engineer pilot chef baker dentist plumber "
            "architect journalist"
        )
    ),
    "sport": tuple(_words("football tennis basketball golf baseball hockey volleyball rugby")),
    "number_word": tuple(_words("two three four five six seven eight nine ten eleven twelve")),
}
# Capitalised categories match exactly; the others in any case, singular or plural.
PROPER_CATEGORIES = frozenset(["female_name", "male_name", "city", "country", "weekday", "month"])
PLURAL_CATEGORIES = frozenset(["animal", "fruit", "vehicle", "instrument", "occupation"])
# Counting words decide the answer of a math or reasoning problem: never swapped there.
QUANTITY_TASKS = frozenset(["math", "reasoning"])


def _category_lookup() -> dict[str, tuple[str, str, bool]]:
    """surface form → (category, singular member, is plural)."""
    lookup: dict[str, tuple[str, str, bool]] = {}
    for category, members in CATEGORIES.items():
        for member in members:
            key = member if category in PROPER_CATEGORIES else member.lower()
            lookup[key] = (category, member, False)
            if category in PLURAL_CATEGORIES:
                lookup[pluralize(member).lower()] = (category, member, True)
    return lookup


CATEGORY_LOOKUP = _category_lookup()
CATEGORY_OF = {member: category for category, members in CATEGORIES.items() for member in members}


def _category_key(token: str) -> str | None:
    if token in CATEGORY_LOOKUP and CATEGORY_LOOKUP[token][0] in PROPER_CATEGORIES:
        return token
    lower = token.lower()
    if lower in CATEGORY_LOOKUP and CATEGORY_LOOKUP[lower][0] not in PROPER_CATEGORIES:
        return lower
    return None


def _category_source_texts(ctx: TransformContext) -> list[str]:
    # QA: substitute what the question asks about (the answer itself usually is not there);
    # relation extraction: never the entities; elsewhere every field, so fields stay consistent.
    if ctx.task_id == "qa" and "question" in ctx.sample_fields:
        return [ctx.sample_fields["question"]]
    if ctx.task_id == "relation_extraction":
        return [ctx.sample_fields.get(ctx.field, "")]
    return [ctx.sample_fields[name] for name in sorted(ctx.sample_fields)] or [""]


def category_mapping(texts: list[str], ctx: TransformContext) -> dict[str, str]:
    """Singular member → replacement member, drawn from ``ctx.rng`` in a stable order."""
    entities = entity_words(ctx)
    found: list[str] = []
    present: set[str] = set()
    for text in texts:
        for token in tokenize(text):
            key = _category_key(token) if is_word(token) else None
            if key is None or norm(token) in entities:
                continue
            category, member, _ = CATEGORY_LOOKUP[key]
            if category == "number_word" and ctx.task_id in QUANTITY_TASKS:
                continue
            present.add(member)
            if member not in found:
                found.append(member)
    limit = int(ctx.params.get("max_words", 3))
    chosen = ctx.rng.sample(found, min(limit, len(found))) if found else []
    mapping: dict[str, str] = {}
    for member in sorted(chosen, key=found.index):
        category = CATEGORY_OF[member]
        used = present | set(mapping.values())
        options = [m for m in CATEGORIES[category] if m not in used]
        if options:
            mapping[member] = ctx.rng.choice(options)
    return mapping


@transform_relation(
    id="word.same_category",
    name="Same-category substitution",
    category=CATEGORY,
    description=(
        "Swaps up to three names, cities, countries, days, months, colours, animals, fruits, "
        "vehicles, instruments, occupations, sports or number words for another member of the "
        "same category (our own lists), consistently across the sample's fields. The answer "
        "should not change."
    ),
    example="Emma flew from Paris to Tokyo on Monday with her dog.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions=(
        "a word from one of our category lists (QA: in the question; relation extraction: not "
        "an entity; math/reasoning: number words excluded)"
    ),
    ref="LLMorph 137",
    per_field=False,
    params={"max_words": 3},
)
def same_category(text: str, ctx: TransformContext) -> str:
    mapping = category_mapping(_category_source_texts(ctx), ctx)
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    entities = entity_words(ctx)
    for index, token in enumerate(tokens):
        if not is_word(token) or index in protected or norm(token) in entities:
            continue
        key = _category_key(token)
        if key is None:
            continue
        _, member, plural = CATEGORY_LOOKUP[key]
        if member in mapping:
            replacement = pluralize(mapping[member]) if plural else mapping[member]
            tokens[index] = match_case(token, replacement)
    return _changed(text, "".join(tokens), "no word from our category lists to substitute")


# ---------------------------------------------------------------- subject number


def subject_of(tokens: list[str], index: int) -> str:
    """'i', 'plural' or 'singular': the grammatical subject just left of a verb."""
    j = prev_word(tokens, index)
    while j is not None and (norm(tokens[j]) in ADVERBS or norm(tokens[j]).endswith("ly")):
        j = prev_word(tokens, j)
    if j is None:
        return "singular"
    word = norm(tokens[j])
    if word == "i":
        return "i"
    if word in PLURAL_PRONOUNS:
        return "plural"
    if word in SUBJECT_PRONOUNS:
        return "singular"
    if tokens[j][:1].isupper() and word not in STOPWORDS:
        return "plural" if is_plural_noun(word) and word not in SINGULAR_OF else "singular"
    before = prev_word(tokens, j)
    after_determiner = before is not None and norm(tokens[before]) in DETERMINERS
    if word not in STOPWORDS and (after_determiner or not is_verb_form(word)):
        return "plural" if is_plural_noun(word) else "singular"
    return "singular"


def _present_of(base: str, subject: str) -> str:
    return base if subject in {"i", "plural"} else third_person(base)


def _be_present(subject: str) -> str:
    return {"i": "am", "plural": "are"}.get(subject, "is")


def finite_verb(tokens: list[str], index: int) -> VerbForm | None:
    """The lexicon verb at ``index`` if it is used as a finite verb (best effort).

    It needs a word before it in the same sentence that is not a determiner, preposition, 'to',
    an auxiliary (then it is a participle or an infinitive) or an adjective; a bare base form
    also needs a plural or first/second-person subject.
    """
    forms = forms_of(tokens[index])
    if not forms:
        return None
    before = prev_word(tokens, index)
    if before is None and not _after_comma_inside_sentence(tokens, index):
        return None
    previous = norm(tokens[before]) if before is not None else ""
    if (
        previous in DETERMINERS
        or previous in PREPOSITIONS
        or previous in AUXILIARIES
        or previous in NEGATED
        or previous in ADJECTIVES
        or previous in {"not", "to"}
    ):
        return None
    for kind in ("3sg", "past"):
        for form in forms:
            if form.kind == kind:
                return form
    base = next((f for f in forms if f.kind == "base"), None)
    if base is not None and subject_of(tokens, index) in {"i", "plural"}:
        return base
    return None


def _after_comma_inside_sentence(tokens: list[str], index: int) -> bool:
    # "Sarah, my neighbour, bakes bread": a comma, and some word before it.
    for j in range(index - 1, -1, -1):
        if tokens[j].isspace():
            continue
        return tokens[j] == "," and any(is_word(t) for t in tokens[:j])
    return False


# ---------------------------------------------------------------- 152: negation


def _is_participle_or_gerund(word: str) -> bool:
    lower = norm(word)
    return lower == "been" or lower.endswith("ing") or has_kind(lower, "participle") is not None


def _question_start(tokens: list[str], index: int) -> bool:
    return prev_word(tokens, index) is None and "?" in tokens


def _negate_sentence(tokens: list[str]) -> list[str] | None:
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
                tokens[following] = match_case(tokens[i], _conjugate_like(verb, aux))
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
                    tokens[following] = match_case(tokens[before], _conjugate_like(verb, aux))
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
                and _is_participle_or_gerund(tokens[following])
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


def _conjugate_like(base: str, aux: str) -> str:
    """The verb form do-support stood for: does+go → goes, did+go → went, do+go → go."""
    if base == "be":
        return {"does": "is", "did": "was"}.get(aux, "are")
    if aux == "does":
        return third_person(base)
    if aux == "did":
        return past_tense(base)
    return base


@transform_relation(
    id="word.negation",
    name="Negation",
    category=CATEGORY,
    description=(
        "Negates the main verb of the first sentence that has one: 'is' → 'is not', 'can' → "
        "'cannot', 'sells' → 'does not sell'; an existing negation is removed instead. The "
        "answer should change."
    ),
    example="The bakery sells fresh bread every morning.",
    kind=RelationKind.RULE,
    expectation=Expectation.DIFFERENT,
    preconditions="a sentence with an auxiliary, a form of be/have/do or a known verb",
    ref="LLMorph 152",
)
def negation(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    position = 0
    for sentence in split_sentences(tokens):
        indices = range(position, position + len(sentence))
        position += len(sentence)
        if any(i in protected for i in indices):
            continue
        negated = _negate_sentence(list(sentence))
        if negated is not None:
            before = "".join(tokens[: indices.start])
            after = "".join(tokens[indices.stop :])
            return _changed(text, before + "".join(negated) + after, "nothing to negate")
    raise NotApplicable("no verb to negate")


# ---------------------------------------------------------------- 155: tense


def _tense_counts(sentences: list[list[str]]) -> tuple[int, int]:
    past = present = 0
    for tokens in sentences:
        for i, token in enumerate(tokens):
            if not is_word(token):
                continue
            lower = norm(token)
            if lower in {"was", "were", "had", "did", "wasn't", "weren't", "hadn't", "didn't"}:
                past += 1
            elif lower in {"am", "is", "are", "has", "have", "does", "do"} or lower in {
                "isn't",
                "aren't",
                "hasn't",
                "haven't",
                "doesn't",
                "don't",
            }:
                present += 1
            elif (form := finite_verb(tokens, i)) is not None:
                if form.kind == "past" and past_tense(form.base) != form.base:
                    past += 1
                elif form.kind in {"3sg", "base"}:
                    present += 1
    return past, present


_TO_PAST = {
    "am": "was",
    "is": "was",
    "are": "were",
    "has": "had",
    "have": "had",
    "does": "did",
    "do": "did",
    "isn't": "wasn't",
    "aren't": "weren't",
    "hasn't": "hadn't",
    "haven't": "hadn't",
    "doesn't": "didn't",
    "don't": "didn't",
}


def _sentence_to_past(tokens: list[str]) -> None:
    for i, token in enumerate(tokens):
        if not is_word(token):
            continue
        lower = norm(token)
        before = prev_word(tokens, i)
        after_modal = before is not None and norm(tokens[before]) in MODALS | {"to"}
        if lower in _TO_PAST and not after_modal:
            tokens[i] = match_case(token, _TO_PAST[lower])
            continue
        form = finite_verb(tokens, i)
        if form is not None and form.kind in {"3sg", "base"}:
            tokens[i] = match_case(token, past_tense(form.base))


def _sentence_to_present(tokens: list[str]) -> None:
    last_subject = "singular"
    for i, token in enumerate(tokens):
        if not is_word(token):
            continue
        lower = norm(token)
        before = prev_word(tokens, i)
        previous = norm(tokens[before]) if before is not None else ""
        if previous in MODALS | {"to"}:
            continue
        subject = last_subject if previous in CONJUNCTIONS else subject_of(tokens, i)
        if lower in {"was", "were", "wasn't", "weren't"}:
            be = _be_present(subject) if lower in {"was", "wasn't"} else "are"
            if lower.endswith("n't"):
                be = "am not" if be == "am" else be + "n't"
            tokens[i] = match_case(token, be)
        elif lower in {"had", "hadn't", "did", "didn't"}:
            base = "have" if lower.startswith("had") else "do"
            present = _present_of(base, subject)
            tokens[i] = match_case(token, present + ("n't" if lower.endswith("n't") else ""))
        else:
            form = finite_verb(tokens, i)
            if form is None or form.kind != "past" or past_tense(form.base) == form.base:
                continue
            tokens[i] = match_case(token, _present_of(form.base, subject))
        last_subject = subject


@transform_relation(
    id="word.tense",
    name="Tense change",
    category=CATEGORY,
    description=(
        "Moves the finite verbs between present and past (whichever the text mostly uses turns "
        "into the other): 'walks' → 'walked', 'is' → 'was', 'went' → 'goes'. Modal verbs stay. "
        "The answer should not change."
    ),
    example="She walks to the station and buys a newspaper.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a present- or past-tense verb we know (be/have/do or our verb list)",
    ref="LLMorph 155",
    tasks=frozenset(BUILTIN_TASKS) - {"sentiment_score"},
)
def tense(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    sentences = split_sentences(tokens)
    past, present = _tense_counts(sentences)
    if past == present == 0:
        raise NotApplicable("no present- or past-tense verb we know")
    convert = _sentence_to_present if past > present else _sentence_to_past
    pieces: list[str] = []
    position = 0
    for sentence in sentences:
        span = range(position, position + len(sentence))
        position += len(sentence)
        changed = list(sentence)
        if not any(i in protected for i in span):
            convert(changed)
        pieces.extend(changed)
    return _changed(text, "".join(pieces), "no verb whose tense we can change")


# ---------------------------------------------------------------- 149: singular / plural

SINGULAR_DETS = {"a": "", "an": "", "this": "these", "that": "those"}
PLURAL_DETS = {"these": "this", "those": "that", "some": "a"}
POSSESSIVE_DETS = frozenset(_words("the my your his her its our their"))
VERB_TO_PLURAL = {
    "is": "are",
    "was": "were",
    "has": "have",
    "does": "do",
    "isn't": "aren't",
    "wasn't": "weren't",
    "hasn't": "haven't",
    "doesn't": "don't",
}
VERB_TO_SINGULAR = {v: k for k, v in VERB_TO_PLURAL.items()}
_QUANTIFIER_NOUNS = frozenset(_words("few lot little couple bit number"))


@dataclass
class NounPhrase:
    det: int
    head: int


def noun_phrases(tokens: list[str], protected: set[int]) -> list[NounPhrase]:
    """Determiner + optional adjectives + a noun (best effort, no tagger)."""
    phrases = []
    for i, token in enumerate(tokens):
        if not is_word(token) or i in protected or norm(token) not in DETERMINERS:
            continue
        j = next_word(tokens, i)
        while j is not None and norm(tokens[j]) in ADJECTIVES:
            j = next_word(tokens, j)
        if j is None or j in protected or not is_noun_candidate(tokens[j]):
            continue
        if norm(tokens[j]) in _QUANTIFIER_NOUNS:
            continue
        # A second noun makes a compound ("school bus"): its last word is the head.
        k = next_word(tokens, j)
        if (
            k is not None
            and k not in protected
            and is_noun_candidate(tokens[k])
            and not is_plural_noun(tokens[k])  # "the dog growls": an unknown verb, not a noun
            and not re.search(r"(ed|ing)$", norm(tokens[k]))
        ):
            j = k
        phrases.append(NounPhrase(det=i, head=j))
    return phrases


def _agree(tokens: list[str], head: int, table: dict[str, str], to_plural: bool) -> None:
    verb = next_word(tokens, head)
    if verb is None:
        return
    lower = norm(tokens[verb])
    if lower in table:
        tokens[verb] = match_case(tokens[verb], table[lower])
        return
    form = has_kind(lower, "3sg" if to_plural else "base")
    if form is not None and not has_kind(lower, "past"):
        new = form.base if to_plural else third_person(form.base)
        tokens[verb] = match_case(tokens[verb], new)


def _a_or_an(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _to_plural(tokens: list[str], phrases: list[NounPhrase]) -> bool:
    changed = False
    for phrase in reversed(phrases):  # right to left: removals do not shift earlier indices
        det = norm(tokens[phrase.det])
        noun = tokens[phrase.head]
        if norm(noun) in INVARIANT_NOUNS or is_plural_noun(noun):
            continue
        if det not in SINGULAR_DETS and det not in POSSESSIVE_DETS:
            continue
        tokens[phrase.head] = pluralize(noun)
        _agree(tokens, phrase.head, VERB_TO_PLURAL, to_plural=True)
        if SINGULAR_DETS.get(det):
            tokens[phrase.det] = match_case(tokens[phrase.det], SINGULAR_DETS[det])
        elif det in SINGULAR_DETS:
            capital = tokens[phrase.det][:1].isupper()
            following = next_word(tokens, phrase.det)
            tokens[phrase.det : phrase.det + 1] = [""]
            if following is not None and capital:
                tokens[following] = capitalize_first(tokens[following])
            if phrase.det + 1 < len(tokens) and tokens[phrase.det + 1].isspace():
                tokens[phrase.det + 1] = ""
        changed = True
    return changed


def _to_singular(tokens: list[str], phrases: list[NounPhrase]) -> bool:
    changed = False
    for phrase in reversed(phrases):
        det = norm(tokens[phrase.det])
        noun = tokens[phrase.head]
        if not is_plural_noun(noun) or (det not in PLURAL_DETS and det not in POSSESSIVE_DETS):
            continue
        singular = singularize(noun)
        tokens[phrase.head] = singular
        _agree(tokens, phrase.head, VERB_TO_SINGULAR, to_plural=False)
        if det == "some":
            following = next_word(tokens, phrase.det)
            article = _a_or_an(tokens[following] if following is not None else singular)
            tokens[phrase.det] = match_case(tokens[phrase.det], article)
        elif det in PLURAL_DETS:
            tokens[phrase.det] = match_case(tokens[phrase.det], PLURAL_DETS[det])
        changed = True
    return changed


@transform_relation(
    id="word.number",
    name="Singular ↔ plural",
    category=CATEGORY,
    description=(
        "Turns singular noun phrases plural ('the cat sits' → 'the cats sit', 'a dog' → "
        "'dogs'), or, when there is none, plural ones singular, with the verb that follows. "
        "The answer should not change."
    ),
    example="The cat sleeps on the sofa.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a determiner + noun phrase whose number can change",
    ref="LLMorph 149",
    # LLMorph leaves NLI out; counts decide math and reasoning answers.
    tasks=frozenset(BUILTIN_TASKS) - {"nli", "math", "reasoning"},
)
def number(text: str, ctx: TransformContext) -> str:
    tokens = tokenize(text)
    phrases = noun_phrases(tokens, protected_tokens(text, tokens))
    if not _to_plural(tokens, phrases):
        _to_singular(tokens, phrases)
    return _changed(text, "".join(tokens), "no noun phrase whose number we can change")


# ---------------------------------------------------------------- phrases for voice / questions


@dataclass
class Phrase:
    """A noun phrase as words (for re-assembly) and whether it is plural."""

    words: list[str]
    plural: bool
    pronoun: bool = False
    proper: bool = False


def parse_phrase(words: list[str], start: int, stop: int, subject: bool) -> int | None:
    """End (exclusive) of a noun phrase starting at ``start``, or None.

    A pronoun; a run of capitalised names; a determiner + 1–3 words that are not function
    words or verbs; or a bare noun (+ one more noun).
    """
    if start >= stop:
        return None
    first = words[start]
    lower = norm(first)
    pronouns = SUBJECT_PRONOUNS if subject else OBJECT_PRONOUNS
    after = start + 1
    if lower in pronouns and not (
        lower == "her" and after < stop and is_noun_candidate(words[after])
    ):
        return after
    if lower in DETERMINERS:
        end = after
        while end < stop and end - after < 3 and _np_word(words[end]):
            end += 1
        return end if end > after else None
    if first[:1].isupper() and lower not in STOPWORDS and not is_verb_form(first):
        end = after
        while end < stop and words[end][:1].isupper() and not is_verb_form(words[end]):
            end += 1
        return end
    if is_noun_candidate(first):
        end = after
        if end < stop and is_noun_candidate(words[end]):
            end += 1
        return end
    return None


def _np_word(word: str) -> bool:
    lower = norm(word)
    return lower.isalpha() and lower not in STOPWORDS and not is_verb_form(lower)


def make_phrase(words: list[str]) -> Phrase:
    lower = [norm(w) for w in words]
    if len(words) == 1 and (lower[0] in SUBJECT_PRONOUNS or lower[0] in OBJECT_PRONOUNS):
        return Phrase(words, lower[0] in PLURAL_PRONOUNS or lower[0] == "i", pronoun=True)
    capitalised = all(w[:1].isupper() for w in words) and lower[0] not in DETERMINERS
    # A lone capitalised plural-looking word that is not a known name is a sentence-initial
    # common noun ("Dogs chase cats"); anything else capitalised is taken for a name.
    proper = capitalised and (
        len(words) > 1 or words[0] in CATEGORY_LOOKUP or not is_plural_noun(words[0])
    )
    plural = lower[0] in {"these", "those", "some"} or (not proper and is_plural_noun(lower[-1]))
    return Phrase(words, plural, proper=proper)


def _lower_first(words: list[str]) -> list[str]:
    """Lower-case the first word of a phrase moved inside a sentence ("The" → "the").

    Names keep their capital (relation extraction needs its entities spelled as given).
    """
    first = words[0]
    if norm(first) == "i" or make_phrase(words).proper or not first[1:].islower():
        return list(words)
    return [first[:1].lower() + first[1:], *words[1:]]


def phrase_as_subject(phrase: Phrase) -> str:
    words = list(phrase.words)
    if phrase.pronoun:
        words[0] = OBJECT_TO_SUBJECT.get(norm(words[0]), norm(words[0]))
    return capitalize_first(" ".join(words))


def phrase_as_object(phrase: Phrase) -> str:
    words = list(phrase.words)
    if phrase.pronoun:
        lower = norm(words[0])
        return SUBJECT_TO_OBJECT.get(lower, lower)
    return " ".join(_lower_first(words))


def _tail(tokens: list[str], after_index: int) -> str:
    return "".join(tokens[after_index + 1 :])


def _simple_sentence(tokens: list[str]) -> list[int] | None:
    """Word and number indices, when the sentence has only those, spaces, commas and an end."""
    indices = []
    for i, token in enumerate(tokens):
        if is_word(token) or token[:1].isdigit():
            indices.append(i)
        elif not (token.isspace() or token in _SENTENCE_END or token == ","):
            return None
    return indices


# ---------------------------------------------------------------- 136: voice


def _active_to_passive(tokens: list[str]) -> str | None:
    indices = _simple_sentence(tokens)
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


def _passive_to_active(tokens: list[str]) -> str | None:
    indices = _simple_sentence(tokens)
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


@transform_relation(
    id="word.voice",
    name="Active ↔ passive voice",
    category=CATEGORY,
    description=(
        "Rewrites simple subject–verb–object sentences in the passive ('The committee approved "
        "the budget.' → 'The budget was approved by the committee.') and simple passives with "
        "'by' in the active. The answer should not change."
    ),
    example="The committee approved the new budget.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a plain sentence 'subject + known transitive verb + object …' or its passive",
    ref="LLMorph 136",
    tasks=frozenset(BUILTIN_TASKS) - {"sentiment_score"},
)
def voice(text: str, ctx: TransformContext) -> str:
    return _convert_sentences(
        text,
        lambda sentence: _passive_to_active(sentence) or _active_to_passive(sentence),
        nothing="no simple subject–verb–object sentence (or passive) found",
        unchanged="voice change left the text unchanged",
    )


def _convert_sentences(
    text: str,
    convert: Callable[[list[str]], str | None],
    *,
    nothing: str,
    unchanged: str,
) -> str:
    """Rewrite each sentence that ``convert`` can handle (None: keep it); math is never touched."""
    tokens = tokenize(text)
    protected = protected_tokens(text, tokens)
    pieces: list[str] = []
    position = 0
    converted = False
    for sentence in split_sentences(tokens):
        span = range(position, position + len(sentence))
        position += len(sentence)
        result = None if any(i in protected for i in span) else convert(sentence)
        converted = converted or result is not None
        pieces.append(result if result is not None else "".join(sentence))
    if not converted:
        raise NotApplicable(nothing)
    return _changed(text, "".join(pieces), unchanged)


# ---------------------------------------------------------------- 57: declarative ↔ question

WH_WORDS = frozenset(_words("who whom whose what which where when why how"))


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


def _declarative_to_question(tokens: list[str]) -> str | None:
    indices = _simple_sentence(tokens)
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
            if lower in HAVE_FORMS and not _is_participle_or_gerund(nxt) and nxt != "not":
                # "has" as the main verb: do-support.
                aux, main = {"has": "does", "have": "do", "had": "did"}[lower], "have"
            elif lower in DO_FORMS and nxt not in BASE_VERBS | {"not", "have", "be"}:
                main = "do"
            subject = " ".join(_lower_first(words[:v]))
            rest = _span(tokens, indices, v + 1, len(words))
            return _join(capitalize_first(aux), subject, main, rest) + "?" + space
        form = finite_verb(tokens, indices[v])
        if form is not None:
            aux = {"3sg": "does", "past": "did"}.get(form.kind, "do")
            subject = " ".join(_lower_first(words[:v]))
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
            and _np_word(words[end])
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


def _question_to_declarative(tokens: list[str]) -> str | None:
    indices = _simple_sentence(tokens)
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
        middle = f"{do} not {verb}" if aux in NEGATED else _conjugate_like(verb, do)
        rest = _span(tokens, indices, end + 1, len(words))
    else:
        middle = NEGATED[aux] + " not" if aux in NEGATED else aux
        if aux in {"cannot", "can't"}:
            middle = "cannot"
        rest = _span(tokens, indices, end, len(words))
    return _join(subject, middle, rest) + "." + space


@transform_relation(
    id="word.question_form",
    name="Declarative ↔ interrogative",
    category=CATEGORY,
    description=(
        "Turns plain statements into yes/no questions ('Sarah works for Acme.' → 'Does Sarah "
        "work for Acme?') and yes/no questions into statements. As in LLMorph, only for "
        "relation extraction, where the outputs should stay similar (similarity ≥ 0.4)."
    ),
    example="Marie Curie worked at the University of Paris.",
    kind=RelationKind.RULE,
    expectation=Expectation.EQUIVALENT,
    preconditions="a plain statement with a known verb, or a yes/no question",
    ref="LLMorph 57",
    tasks=frozenset(["relation_extraction"]),
    threshold=0.4,
)
def question_form(text: str, ctx: TransformContext) -> str:
    return _convert_sentences(
        text,
        lambda sentence: _question_to_declarative(sentence) or _declarative_to_question(sentence),
        nothing="no plain statement or yes/no question to convert",
        unchanged="question form left the text unchanged",
    )
