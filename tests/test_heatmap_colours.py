"""app/analysis/heatmap_colours.py: the heatmap cell's colour and its text's ink, checked
against WCAG 2's relative luminance and contrast ratio worked by hand (issue 28 item 1)."""

from __future__ import annotations

import pytest

from app.analysis.catalogue.definitions import HEATMAP_METRICS
from app.analysis.heatmap_colours import (
    AA_CONTRAST,
    ColourScale,
    colour_at,
    contrast_ratio,
    ink_for,
    parse_colour,
    ramp,
    relative_luminance,
)

WHITE, BLACK = (255, 255, 255), (0, 0, 0)


def test_relative_luminance_of_hand_worked_colours():
    """WCAG 2: channel c = v/255, linear c/12.92 if c ≤ 0.04045 else ((c + 0.055)/1.055)^2.4;
    L = 0.2126 R + 0.7152 G + 0.0722 B. Pure red: 0.2126. #777777: c = 0.4667 →
    (0.5217/1.055)^2.4 = 0.4945^2.4 = 0.1845 in every channel, so L = 0.1845. #0a0a0a: c =
    0.0392 ≤ 0.04045 → 0.0392/12.92 = 0.003035."""
    assert relative_luminance(WHITE) == pytest.approx(1.0)
    assert relative_luminance(BLACK) == 0.0
    assert relative_luminance((255, 0, 0)) == pytest.approx(0.2126)
    assert relative_luminance((0x77, 0x77, 0x77)) == pytest.approx(0.1845, abs=1e-4)
    assert relative_luminance((10, 10, 10)) == pytest.approx(0.003035, abs=1e-6)


def test_contrast_ratio_of_hand_worked_pairs():
    """(L1 + 0.05) / (L2 + 0.05): white on black 1.05 / 0.05 = 21; red on white 1.05 / 0.2626 =
    4.00 (below AA), on black 0.2626 / 0.05 = 5.25; #777777 on white 1.05 / 0.2345 = 4.48 (just
    below AA 4.5), #767676 on white (L 0.1812) 1.05 / 0.2312 = 4.54 (just above). Order of the
    pair does not matter."""
    assert contrast_ratio(WHITE, BLACK) == pytest.approx(21.0)
    assert contrast_ratio((255, 0, 0), WHITE) == pytest.approx(4.00, abs=0.005)
    assert contrast_ratio(BLACK, (255, 0, 0)) == pytest.approx(5.25, abs=0.005)
    assert contrast_ratio((0x77,) * 3, WHITE) == pytest.approx(4.48, abs=0.005)
    assert contrast_ratio(WHITE, (0x76,) * 3) == pytest.approx(4.54, abs=0.005)
    assert contrast_ratio((0x77,) * 3, WHITE) < AA_CONTRAST < contrast_ratio((0x76,) * 3, WHITE)


def test_ink_is_the_one_of_larger_contrast():
    """Red: black 5.25 > white 4.00 → black. The Reds ramp's darkest stop (103,0,13): L ≈
    0.0290, white 1.05 / 0.079 = 13.3 > black 1.6 → white. Pale pink #fde0d2 (the "white
    text on pale pink" of the old report): black."""
    assert ink_for((255, 0, 0)) == "#000000"
    assert ink_for((103, 0, 13)) == "#ffffff"
    assert ink_for(parse_colour("#fde0d2")) == "#000000"


def test_every_heatmap_colour_has_an_ink_of_at_least_aa_contrast():
    """With pure black and white inks some ink reaches 4.58:1 on any colour (where both tie, L
    = 0.179); checked on 101 points of each ramp the catalogue's heatmaps use."""
    for metric in HEATMAP_METRICS.values():
        scale = ColourScale.over(metric.heatmap.colours, 0.0, 1.0, metric.heatmap.midpoint)
        for step in range(101):
            fill = scale.fill(scale.low + (scale.high - scale.low) * step / 100)
            assert contrast_ratio(fill, parse_colour(ink_for(fill))) >= AA_CONTRAST, (metric, fill)


def test_colour_at_interpolates_evenly_spaced_stops_in_rgb():
    """Two stops black → white, halfway: 127.5 → 128. Three stops, 0.75 of the way: halfway
    between the 2nd (100,0,0) and 3rd (100,200,0) → (100,100,0). Outside 0…1: clipped."""
    assert colour_at((BLACK, WHITE), 0.5) == (128, 128, 128)
    assert colour_at(((0, 0, 0), (100, 0, 0), (100, 200, 0)), 0.75) == (100, 100, 0)
    assert colour_at((BLACK, WHITE), 1.7) == WHITE and colour_at((BLACK, WHITE), -1) == BLACK


def test_colour_scale_is_symmetric_around_a_midpoint_and_gives_both_drawings_its_stops():
    """Δ from −0.12 to 0.004 around 0: the scale spans ±0.12, so 0 takes RdBu's middle stop
    (247,247,247); the page's domain and the report's positions name the same 11 stops."""
    scale = ColourScale.over("RdBu", -0.12, 0.004, 0.0)
    assert (scale.low, scale.high) == (-0.12, 0.12)
    assert scale.fill(0.0) == (247, 247, 247)
    assert len(scale.domain()) == len(scale.hex_stops()) == len(scale.plotly_scale()) == 11
    assert scale.plotly_scale()[5] == [0.5, "#f7f7f7"] and scale.domain()[5] == 0.0
    one_value = ColourScale.over("Reds", 0.3, 0.3)
    assert one_value.fill(0.3) == ramp("Reds")[0]  # no range: the light end, no ÷ 0


def test_parse_colour_reads_what_browsers_and_plotly_write():
    assert parse_colour("rgb(252, 187, 161)") == (252, 187, 161)
    assert parse_colour("#FCBBA1") == (252, 187, 161) and parse_colour("#fff") == WHITE
    assert parse_colour("white") == WHITE and parse_colour("rgba(0, 0, 0, 0.5)") == BLACK
    with pytest.raises(ValueError):
        parse_colour("teal-ish")
    with pytest.raises(ValueError):
        ramp("NoSuchRamp")
