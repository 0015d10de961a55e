"""A small rule-based English grammar engine for the word-level relations.

No part-of-speech tagger (NLTK's tagger data cannot be installed here): our own lexicon of
common verbs (regular ones inflected by rule, irregular ones listed), our own word lists, and
rules that are best effort for plain sentences. Modules, from the bottom up: ``tokens``
(tokenizer and sentences), ``lexicon`` (function words), ``verbs`` (verb forms), ``nouns``,
``agreement`` (finite verbs and subjects), then one module per rewrite: ``negation``, ``tense``,
``number``, ``voice`` and ``questions`` (with ``phrases`` for re-assembling noun phrases and
``categories`` for our word categories). Every rewrite works on token lists and returns None (or
leaves the tokens as they are) when it finds nothing it can change; the relations turn that into
a SKIP.
"""
