"""The four 2-D grid encodings of the rrb family and their inverses.

Output format: ``GRID START``, the rows, ``GRID END``, joined with ``\\n``, no trailing
newline. The grid holds the preprocessed problem as it is (trailing spaces included). Every
inverse reads the cells back in the order they were written, by position, so real dots and
spaces in the text are never confused with the filler.
"""

from __future__ import annotations

from collections.abc import Sequence

from relations.rrb_text import finish, preprocess

GRID_START = "GRID START"
GRID_END = "GRID END"
RAILS = 3
SNAKE_ROWS = 5
FILLER = "."

Cell = tuple[int, int]  # (row, column)


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def render_grid(rows: Sequence[str]) -> str:
    """``GRID START``, the rows, ``GRID END``, one per line."""
    return "\n".join([GRID_START, *rows, GRID_END])


def grid_rows(transformed: str) -> list[str]:
    """The rows between the markers. Raises ValueError when the markers are missing."""
    lines = transformed.split("\n")
    if len(lines) < 2 or lines[0] != GRID_START or lines[-1] != GRID_END:
        raise ValueError("not a grid: expected 'GRID START' … 'GRID END' lines")
    return lines[1:-1]


# ---------------------------------------------------------------- rail fence


def _rail(index: int) -> int:
    step = index % (2 * (RAILS - 1))
    return step if step < RAILS else 2 * (RAILS - 1) - step


def rail_fence(text: str) -> str:
    """3-rail zig-zag: character i sits in column i on rail 0,1,2,1,0,…; other cells are ``.``.

    ``"Hello"`` → rows ``H...o``, ``.e.l.``, ``..l..``.
    """
    problem = preprocess(text)
    rows = [
        "".join(char if _rail(i) == rail else FILLER for i, char in enumerate(problem))
        for rail in range(RAILS)
    ]
    return finish(render_grid(rows))


def inverse_rail_fence(transformed: str) -> str:
    """Column by column, the character on the zig-zag rail."""
    rows = grid_rows(transformed)
    width = len(rows[0]) if rows else 0
    return "".join(rows[_rail(i)][i] for i in range(width))


# ---------------------------------------------------------------- rectangle perimeter


def rectangle_size(length: int) -> tuple[int, int]:
    """(height, width) for a text of ``length`` characters (the benchmark's size formulas)."""
    height = max(3, _ceil_div(length + 4, 10))
    width = max(2, _ceil_div(length - 2 * height + 4, 2))
    return height, width


def perimeter_cells(height: int, width: int) -> list[Cell]:
    """The border cells clockwise from the top-left corner (2W + 2H − 4 of them)."""
    top = [(0, col) for col in range(width)]
    right = [(row, width - 1) for row in range(1, height)]
    bottom = [(height - 1, col) for col in range(width - 2, -1, -1)]
    left = [(row, 0) for row in range(height - 2, 0, -1)]
    return top + right + bottom + left


def rectangle_perimeter(text: str) -> str:
    """The text written clockwise round a rectangle's border, padded with spaces; inside ``.``."""
    problem = preprocess(text)
    height, width = rectangle_size(len(problem))
    cells = perimeter_cells(height, width)
    grid = [[FILLER] * width for _ in range(height)]
    for (row, col), char in zip(cells, problem.ljust(len(cells)), strict=True):
        grid[row][col] = char
    return finish(render_grid(["".join(row) for row in grid]))


def inverse_rectangle_perimeter(transformed: str) -> str:
    """The border read clockwise from the top-left; the space padding is dropped.

    (Padding cannot be told from trailing spaces of the text, which the contract ignores.)
    """
    rows = grid_rows(transformed)
    if not rows:
        return ""
    cells = perimeter_cells(len(rows), len(rows[0]))
    return "".join(rows[row][col] for row, col in cells).rstrip(" ")


# ---------------------------------------------------------------- snakes


def snake_vertical_cells(length: int) -> list[Cell]:
    """Fill order of the vertical snake: 5 rows, columns down, up, down, … (first ``length``)."""
    width = _ceil_div(length, SNAKE_ROWS)
    cells = []
    for col in range(width):
        rows = range(SNAKE_ROWS) if col % 2 == 0 else range(SNAKE_ROWS - 1, -1, -1)
        cells.extend((row, col) for row in rows)
    return cells[:length]


def snake_horizontal_cells(length: int) -> list[Cell]:
    """Fill order of the horizontal snake: 5 rows of width ⌈n/5⌉, left→right, right→left, …"""
    width = _ceil_div(length, SNAKE_ROWS)
    cells = []
    for row in range(SNAKE_ROWS):
        cols = range(width) if row % 2 == 0 else range(width - 1, -1, -1)
        cells.extend((row, col) for col in cols)
    return cells[:length]


def _snake(problem: str, cells: list[Cell]) -> list[str]:
    # Cells after the end of the text stay empty strings, so a short row is simply shorter.
    width = _ceil_div(len(problem), SNAKE_ROWS)
    grid = [[""] * width for _ in range(SNAKE_ROWS)]
    for (row, col), char in zip(cells, problem, strict=True):
        grid[row][col] = char
    return ["".join(row) for row in grid]


def _unsnake(rows: Sequence[str], cells_for_length) -> str:
    if len(rows) != SNAKE_ROWS:
        raise ValueError(f"a snake grid has {SNAKE_ROWS} rows, got {len(rows)}")
    cells = cells_for_length(sum(len(row) for row in rows))
    # Each row string holds its filled cells in column order.
    position: dict[Cell, str] = {}
    for row, text in enumerate(rows):
        columns = sorted(col for r, col in cells if r == row)
        if len(columns) != len(text):
            raise ValueError(f"row {row} has {len(text)} characters, expected {len(columns)}")
        position.update({(row, col): char for col, char in zip(columns, text, strict=True)})
    return "".join(position[cell] for cell in cells)


def snake_vertical(text: str) -> str:
    """5 rows; columns filled downward, upward, downward, … from column 0.

    ``"abcdefgh"`` → rows ``a``, ``b``, ``ch``, ``dg``, ``ef``: column 1 runs upward from the
    bottom row, so its three characters land in rows 4, 3, 2 and the top rows stay short.
    """
    problem = preprocess(text)
    return finish(render_grid(_snake(problem, snake_vertical_cells(len(problem)))))


def inverse_snake_vertical(transformed: str) -> str:
    """Columns read downward, upward, … (the row lengths tell where the text ended)."""
    return _unsnake(grid_rows(transformed), snake_vertical_cells)


def snake_horizontal(text: str) -> str:
    """5 rows of width ⌈n/5⌉; rows filled left→right, right→left, …; unused rows are empty.

    ``"Why 7?"`` → ``"GRID START\\nWh\\n y\\n7?\\n\\n\\nGRID END"``.
    """
    problem = preprocess(text)
    return finish(render_grid(_snake(problem, snake_horizontal_cells(len(problem)))))


def inverse_snake_horizontal(transformed: str) -> str:
    """Rows read left→right, right→left, … (the row lengths tell where the text ended)."""
    return _unsnake(grid_rows(transformed), snake_horizontal_cells)
