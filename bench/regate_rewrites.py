"""The validity gate of this checkout over real rewrites already in a database's call cache.

Reads every rewrite the transformation endpoint answered to the prompts of ``si.paraphrase``,
``ad.paraphrase`` and ``si.expand`` (a back-translation's prompts hold the pivot text, not the
source, so they are left out), cleans it as the relation does and prints, per rewrite, what the
gate says — no model is asked. Run it from
another checkout (``cd OLD && python …/regate_rewrites.py DB``) to compare two gates on the same
rewrites; ``bench_rewriter.py`` leaves such a database in ``test-artifacts/rewriter-bench/``.

    .venv/bin/python bench/regate_rewrites.py test-artifacts/rewriter-bench/LABEL/bench.db
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from relations.llm_prompts import clean_rewrite, first_nonempty_line
from relations.registry import get_relation
from relations.validity import check_followup

# How each relation's prompt begins.
PROMPT_OPENINGS = {
    "Paraphrase the text below: express": "si.paraphrase",
    "Paraphrase the text below: say exactly the same thing with different words and a different": (
        "ad.paraphrase"
    ),
    "Expand the text below": "si.expand",
}
_SOURCE = re.compile(r"<text>\n(.*?)\n</text>\s*$", re.S)


def rewrites(db: Path) -> list[dict]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute("SELECT messages, response FROM calls ORDER BY created_at").fetchall()
    conn.close()
    found = []
    for messages, response in rows:
        prompt = json.loads(messages)[-1]["content"]
        relation = next((r for p, r in PROMPT_OPENINGS.items() if prompt.startswith(p)), None)
        source = _SOURCE.search(prompt)
        if relation is None or source is None:
            continue  # the model under test's calls, and the back-translations' pivots
        text = clean_rewrite(response)
        if relation == "ad.paraphrase":
            text = first_nonempty_line(text)
        found.append({"relation": relation, "source": source.group(1), "rewrite": text})
    return found


def main() -> None:
    db = Path(sys.argv[1])
    judged = rewrites(db)
    for row in judged:
        reason = check_followup(get_relation(row["relation"]), row["source"], row["rewrite"])
        row["gate"] = reason if row["rewrite"] else "empty"
        print(json.dumps(row, ensure_ascii=False))
    passed = sum(1 for row in judged if row["gate"] is None)
    print(f"{passed} of {len(judged)} rewrites pass the gate", file=sys.stderr)


if __name__ == "__main__":
    main()
