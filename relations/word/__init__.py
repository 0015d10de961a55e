"""Word-level relations (LLMorph parity 8, 9, 10, 25, 34, 57, 136, 137, 149, 152, 155).

Rule-based English on our grammar engine (``relations.english``), our own word lists, and WordNet
(``relations.wordnet``) for synonyms and antonyms. A transformation that finds nothing it can
change raises ``NotApplicable`` (a SKIP with the reason), never returns its input unchanged.

All randomness comes from ``ctx.rng``. Letters inside math spans and LaTeX commands are left
alone (see ``relations.text_utils.protected_mask``).

Importing this package registers its relations, one module per group.
"""

from relations.word import grammar, keywords, lexical, same_category

__all__ = ["grammar", "keywords", "lexical", "same_category"]
