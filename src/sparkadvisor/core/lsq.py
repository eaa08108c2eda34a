"""Weighted non-negative least squares for the handful of speed constants calibration fits.

Every constant is a rate or a latency, so none may be negative; the problems are small
(tens of rows, a dozen columns), so normal equations and an active set are enough and keep
numpy off the start-up path.
"""

from __future__ import annotations

from collections.abc import Sequence

RIDGE = 1e-9
"""Tiny diagonal term so a column the rows never exercise does not make the system singular."""


def nnls(rows: Sequence[Sequence[float]], targets: Sequence[float], weights: Sequence[float]) -> list[float]:
    """c >= 0 minimising sum_i w_i (rows_i . c - targets_i)^2 (an active set: negative columns pinned at 0)."""
    width = len(rows[0]) if rows else 0
    normal, rhs = _normal_equations(rows, targets, weights, width)
    free = [j for j in range(width) if normal[j][j] > RIDGE]
    for _ in range(2 * width + 1):
        solution = _gauss([[normal[a][b] for b in free] for a in free], [rhs[a] for a in free])
        negative = [(value, j) for value, j in zip(solution, free, strict=True) if value < 0]
        if not negative:
            result = [0.0] * width
            for value, j in zip(solution, free, strict=True):
                result[j] = value
            return result
        # Drop the most negative half at once: each pass costs a solve, and a fit of a dozen
        # columns settles in two or three passes instead of one per negative column.
        for _, j in sorted(negative)[:max(1, len(negative) // 2)]:
            free.remove(j)
    return [0.0] * width


def _normal_equations(rows: Sequence[Sequence[float]], targets: Sequence[float], weights: Sequence[float],
                      width: int) -> tuple[list[list[float]], list[float]]:
    """X^T W X (plus the ridge) and X^T W y."""
    normal = [[RIDGE if a == b else 0.0 for b in range(width)] for a in range(width)]
    rhs = [0.0] * width
    for row, target, weight in zip(rows, targets, weights, strict=True):
        nonzero = [(j, v) for j, v in enumerate(row) if v]
        for a, value_a in nonzero:
            rhs[a] += weight * value_a * target
            line = normal[a]
            for b, value_b in nonzero:
                line[b] += weight * value_a * value_b
    return normal, rhs


def _gauss(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """Solve matrix x = rhs by Gaussian elimination with partial pivoting (matrix is modified)."""
    size = len(rhs)
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        rhs[col], rhs[pivot] = rhs[pivot], rhs[col]
        head = matrix[col][col]
        for r in range(col + 1, size):
            factor = matrix[r][col] / head
            if factor:
                row = matrix[r]
                for k in range(col, size):
                    row[k] -= factor * matrix[col][k]
                rhs[r] -= factor * rhs[col]
    solution = [0.0] * size
    for r in range(size - 1, -1, -1):
        tail = sum(matrix[r][k] * solution[k] for k in range(r + 1, size))
        solution[r] = (rhs[r] - tail) / matrix[r][r]
    return solution
