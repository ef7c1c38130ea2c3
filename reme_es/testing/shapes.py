"""Vector data shapes for k-NN width tests and benchmarks (issue 40): stored vectors and held-out queries that are not
stored vectors. Deterministic for a seed; pure Python (no numpy), unit-length float vectors.

- `zipf_hash`: memories of `words` words drawn from a Zipf-distributed vocabulary, hash-trick embedded (a word adds
  +-1 to one bucket), queries of `query_words` words drawn from the same vocabulary, not taken from the memories: long
  memories searched with short queries from outside the corpus (the shape of issue 40, built by another rule than
  the project's own fits).
- `clustered`: points around `clusters` random centres (spread `spread` of the centre's norm), queries new points of
  the same mixture.
- `uniform`: isotropic Gaussian directions, queries new ones (no structure for the graph to use: the hardest case).
"""

from __future__ import annotations

import math
import random
import zlib
from bisect import bisect
from dataclasses import dataclass
from itertools import accumulate


@dataclass
class Shape:
    """Stored vectors and held-out queries of one shape."""

    name: str
    vectors: list[list[float]]
    queries: list[list[float]]


def unit(v: list[float]) -> list[float]:
    """`v` scaled to length 1 (a zero vector stays zero)."""
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v] if n else v


def _hash_vector(words: list[int], dims: int) -> list[float]:
    v = [0.0] * dims
    for w in words:
        h = zlib.crc32(w.to_bytes(4, "little"))
        v[h % dims] += 1.0 if (h >> 16) & 1 else -1.0
    return unit(v)


def zipf_hash(
    n: int,
    queries: int = 64,
    dims: int = 256,
    vocabulary: int = 5000,
    words: int = 20,
    query_words: int = 6,
    exponent: float = 1.07,
    seed: int = 1,
) -> Shape:
    """Long bag-of-words memories over a Zipf vocabulary and short queries from outside them (module docstring)."""
    rng = random.Random(seed)
    cum = list(accumulate(1.0 / (r + 1) ** exponent for r in range(vocabulary)))

    def draw(k: int) -> list[int]:
        return [bisect(cum, rng.random() * cum[-1]) for _ in range(k)]

    return Shape(
        "zipf-hash",
        [_hash_vector(draw(words), dims) for _ in range(n)],
        [_hash_vector(draw(query_words), dims) for _ in range(queries)],
    )


def clustered(
    n: int, queries: int = 64, dims: int = 128, clusters: int = 50, spread: float = 0.6, seed: int = 2
) -> Shape:
    """Points of a Gaussian mixture and new points of it as queries (module docstring)."""
    rng = random.Random(seed)
    centres = [unit([rng.gauss(0, 1) for _ in range(dims)]) for _ in range(clusters)]
    sigma = spread / math.sqrt(dims)

    def point() -> list[float]:
        c = centres[rng.randrange(clusters)]
        return unit([x + rng.gauss(0, sigma) for x in c])

    return Shape("clustered", [point() for _ in range(n)], [point() for _ in range(queries)])


def uniform(n: int, queries: int = 64, dims: int = 128, seed: int = 3) -> Shape:
    """Isotropic random directions, stored and queried (module docstring)."""
    rng = random.Random(seed)

    def point() -> list[float]:
        return unit([rng.gauss(0, 1) for _ in range(dims)])

    return Shape("uniform", [point() for _ in range(n)], [point() for _ in range(queries)])


def exact_top(vectors: list[list[float]], query: list[float], at: int) -> list[tuple[int, float]]:
    """The `at` nearest stored vectors of `query` by cosine (vectors are unit length), brute force: (index, cosine)."""
    scores = [(i, sum(a * b for a, b in zip(v, query))) for i, v in enumerate(vectors)]
    scores.sort(key=lambda p: -p[1])
    return scores[:at]


SHAPES = {"zipf-hash": zipf_hash, "clustered": clustered, "uniform": uniform}

__all__ = ["SHAPES", "Shape", "clustered", "exact_top", "unit", "uniform", "zipf_hash"]
