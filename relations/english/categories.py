"""Our word categories (names, places, days, animals …) for same-category substitution."""

from __future__ import annotations

from relations.english.nouns import pluralize
from relations.english.tokens import word_list

# Our own category lists. Names are split by usual gender so pronouns still agree.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "female_name": tuple(
        word_list(
            "Alice Emma Olivia Sophia Mia Grace Chloe Lucy Hannah Zoe Maria Sarah Laura Nina "
            "Julia Rosa Anna Clara Ella Ruth"
        )
    ),
    "male_name": tuple(
        word_list(
            "James Oliver Liam Noah Lucas Henry Jack Leo Samuel Daniel Tom Peter Mark David "
            "Paul Carlos Omar Ivan Hugo Felix"
        )
    ),
    "city": tuple(
        word_list(
            "Paris London Berlin Madrid Rome Tokyo Toronto Sydney Cairo Lisbon Vienna Dublin "
            "Oslo Seoul Lima Nairobi Chicago Boston Mumbai Prague"
        )
    ),
    "country": tuple(
        word_list(
            "France Germany Spain Italy Japan Canada Brazil Kenya Egypt Norway Sweden Mexico "
            "India Chile Peru Ireland Portugal Greece Poland Vietnam"
        )
    ),
    "weekday": tuple(word_list("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")),
    # "May" is left out: it is also a modal verb.
    "month": tuple(
        word_list(
            "January February March April June July August September October November December"
        )
    ),
    "colour": tuple(word_list("red blue green yellow purple pink brown grey")),
    # Animals that share a place: a cat sleeps on a windowsill, a bear does not.
    "pet": tuple(word_list("dog cat rabbit hamster parrot")),
    "farm_animal": tuple(word_list("cow goat pig sheep horse duck")),
    "wild_animal": tuple(word_list("lion tiger bear wolf fox deer")),
    "fruit": tuple(word_list("apple banana pear peach plum mango lemon grape melon cherry")),
    # Vehicles and occupations in groups of members that fit the same sentence: a bus ride can
    # be a train ride, not a ship's; a doctor's patient is not a pilot's.
    "road_vehicle": tuple(word_list("car van truck taxi")),
    "transit_vehicle": tuple(word_list("bus train tram")),
    "two_wheeler": tuple(word_list("bicycle motorbike scooter")),
    "boat": tuple(word_list("boat ship ferry yacht")),
    "instrument": tuple(word_list("piano guitar violin flute drum trumpet cello")),
    "health_job": tuple(word_list("doctor nurse dentist surgeon pharmacist")),
    "school_job": tuple(word_list("teacher tutor lecturer instructor")),
    "office_job": tuple(word_list("lawyer architect journalist accountant")),
    "trade_job": tuple(word_list("engineer plumber carpenter electrician mechanic technician")),
    "farm_job": tuple(word_list("farmer gardener")),
    "kitchen_job": tuple(word_list("chef baker waiter")),
    "sport": tuple(word_list("football tennis basketball golf baseball hockey volleyball rugby")),
    "number_word": tuple(word_list("two three four five six seven eight nine ten eleven twelve")),
}
# Capitalised categories match exactly; the others in any case, singular or plural.
PROPER_CATEGORIES = frozenset(["female_name", "male_name", "city", "country", "weekday", "month"])
PLURAL_CATEGORIES = frozenset(
    word_list(
        "pet farm_animal wild_animal fruit instrument road_vehicle transit_vehicle two_wheeler boat health_job "
        "school_job office_job trade_job farm_job kitchen_job"
    )
)


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


def category_key(token: str) -> str | None:
    """The lookup key of a token in our category lists (names match in their case), or None."""
    if token in CATEGORY_LOOKUP and CATEGORY_LOOKUP[token][0] in PROPER_CATEGORIES:
        return token
    lower = token.lower()
    if lower in CATEGORY_LOOKUP and CATEGORY_LOOKUP[lower][0] not in PROPER_CATEGORIES:
        return lower
    return None
