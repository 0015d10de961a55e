"""Our small English lexicon of function words, adjectives and pronouns (no tagger needed)."""

from __future__ import annotations

from relations.english.tokens import word_list

STOPWORDS = frozenset(
    word_list(
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
    word_list("a an the this that these those my your his her its our their some every each")
)
PREPOSITIONS = frozenset(
    word_list(
        "of at by for with about against between into through during before after above below "
        "to from up down in out on off over under within without onto across along around "
        "behind beyond near among since until like"
    )
)
CONJUNCTIONS = frozenset(word_list("and or but nor so yet because although though while if"))
ADVERBS = frozenset(
    word_list("also always never often still just really usually sometimes already even only soon")
)
ADJECTIVES = frozenset(
    word_list(
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
