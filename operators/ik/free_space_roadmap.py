"""Which clear joint configurations can be joined: a sampled roadmap of free space.

A probabilistic roadmap (Kavraki et al., 1996) of a joint box: clear
configurations drawn uniformly, each tried against its nearest neighbours by
straight segments checked at points at most ``resolution_rad`` apart on every
joint (the spacing the fallback's routes are checked at). Only the edges that
join two pieces not yet joined are checked (a union-find over the samples),
so what the roadmap keeps is a spanning forest: one tree per connected piece
of free space it found.

What an answer means: two configurations the roadmap puts in the same region
are joined by a route it can return, every point of which was checked. Two it
puts in different regions are only not joined by this many samples: a narrow
passage between them can be missed. The benchmarks use it to tell which
targets a start can reach at all; it is pure (the caller supplies the check)
and deterministic for a given random stream.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Sequence

import numpy as np

Check = Callable[[np.ndarray], bool]  # True when a configuration is clear

UNKNOWN = -1  # region of a configuration no roadmap node could be joined to


class FreeSpaceRoadmap:
    """A roadmap of the configurations in ``[lower, upper]`` that ``clear`` accepts.

    Args:
        lower, upper: The joint box samples are drawn in.
        clear: The clearance check, called once per checked configuration.
        rng: The random stream samples are drawn from.
        samples: Clear configurations in the roadmap (anchors included).
        neighbours: Nearest nodes (largest joint difference) each node is tried against.
        resolution_rad: Largest joint change between two checked points of a segment.
        anchors: Configurations put in the roadmap first (assumed clear, not checked).
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray, clear: Check, rng: np.random.Generator,
                 samples: int = 6000, neighbours: int = 15, resolution_rad: float = 0.1,
                 anchors: Sequence[np.ndarray] = ()) -> None:
        if samples < 1 or neighbours < 1 or not resolution_rad > 0:
            raise ValueError("samples and neighbours must be >= 1 and resolution_rad > 0")
        self.clear, self.resolution, self.neighbours = clear, resolution_rad, neighbours
        self.checks = 0
        nodes = [np.asarray(a, dtype=float) for a in anchors]
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        while len(nodes) < samples:
            q = rng.uniform(lower, upper)
            if self._check(q):
                nodes.append(q)
        self.nodes = np.array(nodes)
        n = len(self.nodes)
        self._parent = list(range(n))
        self._edges: list[list[int]] = [[] for _ in range(n)]
        for i in range(n):
            for j in self._nearest(self.nodes[i], exclude=i):
                if self._root(i) != self._root(j) and self.segment_clear(self.nodes[i], self.nodes[j]):
                    self._parent[self._root(i)] = self._root(j)
                    self._edges[i].append(j)
                    self._edges[j].append(i)
        self._roots = np.array([self._root(i) for i in range(n)])

    def _check(self, q: np.ndarray) -> bool:
        self.checks += 1
        return bool(self.clear(q))

    def _root(self, i: int) -> int:
        while self._parent[i] != i:
            self._parent[i] = self._parent[self._parent[i]]
            i = self._parent[i]
        return i

    def _nearest(self, q: np.ndarray, exclude: int = -1) -> np.ndarray:
        d = np.max(np.abs(self.nodes - q), axis=1)
        if exclude >= 0:
            d[exclude] = np.inf
        k = min(self.neighbours, len(d) - (exclude >= 0))
        near = np.argpartition(d, k - 1)[:k] if k < len(d) else np.arange(len(d))
        return near[np.argsort(d[near], kind="stable")]

    def segment_clear(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether the points of a -> b (both ends excluded) spaced at most
        ``resolution_rad`` apart on every joint are clear."""
        m = max(1, int(np.ceil(float(np.max(np.abs(b - a))) / self.resolution)))
        return all(self._check(a + (b - a) * (k / m)) for k in range(1, m))

    def _entry(self, q: np.ndarray) -> int:
        """The nearest node a clear straight segment joins ``q`` to, or -1."""
        q = np.asarray(q, dtype=float)
        for j in self._nearest(q):
            if self.segment_clear(q, self.nodes[j]):
                return int(j)
        return -1

    def region(self, q: np.ndarray) -> int:
        """The region (a node index naming the piece) ``q`` joins, or
        ``UNKNOWN`` when none of its nearest nodes is joined to it by a
        straight clear segment. ``q`` itself is assumed clear."""
        j = self._entry(q)
        return UNKNOWN if j < 0 else int(self._roots[j])

    def region_sizes(self) -> dict[int, int]:
        """Nodes per region, largest first."""
        roots, counts = np.unique(self._roots, return_counts=True)
        order = np.argsort(-counts, kind="stable")
        return {int(roots[k]): int(counts[k]) for k in order}

    def node_regions(self) -> np.ndarray:
        """The region of every node, in node order."""
        return self._roots.copy()

    def route(self, a: np.ndarray, b: np.ndarray) -> list[np.ndarray] | None:
        """A route a -> ... -> b through the roadmap (a and b included), every
        segment of which was checked clear; None when they are not joined."""
        ia, ib = self._entry(a), self._entry(b)
        if ia < 0 or ib < 0 or self._roots[ia] != self._roots[ib]:
            return None
        back = {ia: ia}
        todo = deque([ia])
        while todo:
            i = todo.popleft()
            if i == ib:
                break
            for j in self._edges[i]:
                if j not in back:
                    back[j] = i
                    todo.append(j)
        chain = [ib]
        while chain[-1] != ia:
            chain.append(back[chain[-1]])
        return [np.asarray(a, dtype=float)] + [self.nodes[i].copy() for i in reversed(chain)] + \
            [np.asarray(b, dtype=float)]
