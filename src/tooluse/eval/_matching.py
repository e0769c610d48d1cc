"""Maximum one-to-one matching between expected calls and the model's calls."""

from __future__ import annotations

from collections.abc import Sequence


def maximum_matching(compatible: Sequence[Sequence[bool]]) -> dict[int, int]:
    """Pair rows with columns along ``True`` cells, as many pairs as possible.

    ``compatible[row][column]`` says whether expected call ``row`` accepts model call
    ``column``. Returns ``{row: column}``. Augmenting paths (Kuhn's algorithm): a
    row may take a column already held by another row if that row can move on, so
    the result does not depend on the order in which calls are listed, unlike a
    first-fit scan.
    """
    owner_of_column: dict[int, int] = {}

    def place(row: int, visited: set[int]) -> bool:
        for column, ok in enumerate(compatible[row]):
            if not ok or column in visited:
                continue
            visited.add(column)
            holder = owner_of_column.get(column)
            if holder is None or place(holder, visited):
                owner_of_column[column] = row
                return True
        return False

    for row in range(len(compatible)):
        place(row, set())
    return {row: column for column, row in owner_of_column.items()}
