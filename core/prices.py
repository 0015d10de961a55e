"""What an endpoint's tokens cost: a price per million input (prompt) and output (completion)
tokens, in USD, as the user sets it on the endpoint (never fetched). A cost preview without a
price says so instead of guessing one."""

from __future__ import annotations

from dataclasses import dataclass

MAX_PRICE = 1e6  # USD per million tokens: far past any real price, a typo guard


@dataclass(frozen=True)
class TokenPrices:
    per_million_in: float | None = None
    per_million_out: float | None = None

    @property
    def is_set(self) -> bool:
        return self.per_million_in is not None or self.per_million_out is not None


def parse_price(text: str, what: str) -> tuple[float | None, str | None]:
    """An optional price from a form field: (USD per million tokens or None, error or None)."""
    text = text.strip().lstrip("$").replace(",", "")
    if not text:
        return None, None
    try:
        value = float(text)
    except ValueError:
        return None, f"the {what} price must be a number of USD per million tokens (or empty)"
    if not 0 <= value < MAX_PRICE:
        return None, f"the {what} price must be 0 or more USD per million tokens"
    return value, None
