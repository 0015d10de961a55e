"""The colour of each heatmap cell and the ink its text is printed in, worked out here once so
that the Analysis page (Vega-Lite) and the HTML report (plotly) paint the same cell the same.

A cell's colour follows its value alone, on the metric's ColorBrewer ramp (the catalogue names
it: "Reds", "RdBu", …, taken from ``plotly.colors``, which both drawings are given as explicit
stops, interpolated in RGB). Its text is black or white, whichever contrasts more with that
colour by the WCAG 2 relative-luminance formula: against pure black or white some ink always
reaches 4.58:1, above AA's 4.5:1 for normal text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import plotly.colors

RGB = tuple[int, int, int]

DARK_INK = "#000000"
LIGHT_INK = "#ffffff"
AA_CONTRAST = 4.5
"""WCAG 2 level AA: the least contrast ratio for normal-size text against its background."""


def ramp(name: str) -> tuple[RGB, ...]:
    """The ColorBrewer ramp a catalogue scale names ("Reds", "RdBu", …), low end first (for
    RdBu: red at the low end, blue at the high end)."""
    found = getattr(plotly.colors.sequential, name, None) or getattr(
        plotly.colors.diverging, name, None
    )
    if found is None:
        raise ValueError(f"unknown colour ramp {name!r}")
    return tuple(parse_colour(colour) for colour in found)


_RGB_TEXT = re.compile(r"rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")


def parse_colour(text: str) -> RGB:
    """``"rgb(252, 187, 161)"``, ``"#fcbba1"``, ``"#fff"``, ``"white"`` or ``"black"`` as RGB."""
    text = text.strip().lower()
    named = {"white": (255, 255, 255), "black": (0, 0, 0)}
    if text in named:
        return named[text]
    if text.startswith("#"):
        digits = text[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    found = _RGB_TEXT.match(text)
    if found is None:
        raise ValueError(f"not a colour: {text!r}")
    return int(found[1]), int(found[2]), int(found[3])


def hex_colour(rgb: RGB) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def colour_at(stops: tuple[RGB, ...], position: float) -> RGB:
    """The colour at ``position`` (0 = first stop, 1 = last, clipped) of evenly spaced stops,
    interpolated linearly in RGB, as Vega (``interpolate: rgb``) and plotly both do."""
    position = min(1.0, max(0.0, position))
    scaled = position * (len(stops) - 1)
    index = min(int(scaled), len(stops) - 2)
    share = scaled - index
    low, high = stops[index], stops[index + 1]
    return tuple(round(a + (b - a) * share) for a, b in zip(low, high, strict=True))  # type: ignore[return-value]


def relative_luminance(rgb: RGB) -> float:
    """WCAG 2 relative luminance: each sRGB channel linearised, weighted 0.2126 R + 0.7152 G +
    0.0722 B (0 for black, 1 for white)."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: RGB, b: RGB) -> float:
    """WCAG 2 contrast ratio (L1 + 0.05) / (L2 + 0.05), the lighter luminance on top: 1 to 21."""
    light, dark = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def ink_for(fill: RGB) -> str:
    """Black or white text on ``fill``: whichever contrasts more."""
    dark = contrast_ratio(fill, parse_colour(DARK_INK))
    light = contrast_ratio(fill, parse_colour(LIGHT_INK))
    return DARK_INK if dark >= light else LIGHT_INK


@dataclass(frozen=True)
class ColourScale:
    """A metric's ramp laid over the values ``low``…``high`` (a diverging ramp symmetric around
    its midpoint, so the middle colour is the midpoint's)."""

    stops: tuple[RGB, ...]
    low: float
    high: float

    @classmethod
    def over(
        cls, ramp_name: str, low: float, high: float, midpoint: float | None = None
    ) -> ColourScale:
        if midpoint is not None:
            half = max(abs(low - midpoint), abs(high - midpoint)) or 1.0
            low, high = midpoint - half, midpoint + half
        elif high <= low:  # one value: the ramp's light end, not a division by zero
            high = low + 1.0
        return cls(ramp(ramp_name), low, high)

    def position(self, value: float) -> float:
        return (value - self.low) / (self.high - self.low)

    def fill(self, value: float) -> RGB:
        return colour_at(self.stops, self.position(value))

    def domain(self) -> list[float]:
        """The value at each stop (Vega's piecewise domain, paired with :meth:`hex_stops`)."""
        last = len(self.stops) - 1
        span = self.high - self.low
        return [round(self.low + span * i / last, 12) for i in range(len(self.stops))]

    def hex_stops(self) -> list[str]:
        return [hex_colour(stop) for stop in self.stops]

    def plotly_scale(self) -> list[list[float | str]]:
        """The stops as a plotly colour scale (position 0…1, colour), for zmin/zmax low/high."""
        last = len(self.stops) - 1
        return [[i / last, hex_colour(stop)] for i, stop in enumerate(self.stops)]
