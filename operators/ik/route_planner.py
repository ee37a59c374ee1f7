"""Joint-space routes round obstacles: RRT-Connect, run a few checks at a time.

When neither the straight joint-space segment from an arm's posture to a
search solution nor the one through home is clear, the fallback asks this
planner for a route. RRT-Connect (Kuffner and LaValle, 2000) grows one tree
from each end towards random joint samples and tries to join them; every edge
is checked at points at most ``resolution_rad`` apart on every joint, so a
route is clear at the same spacing as the fallback's straight-route check. The
joined route is then shortened by replacing stretches with straight segments
where those are clear.

The planner is a pure function of its inputs and random stream: the caller
supplies the clearance check and spends a bounded number of checks per control
tick (:meth:`RoutePlanner.advance`), so the tick's cost stays bounded and a
replay plans the same route.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

Check = Callable[[np.ndarray], bool]  # True when a configuration is clear


class RoutePlanner:
    """One route search from ``start`` to ``goal`` (joint vectors of equal length).

    Args:
        start: Where the route begins (assumed clear; it is not checked).
        goal: Where it ends (assumed clear).
        lower, upper: Joint bounds samples are drawn within.
        clear: The clearance check, called once per checked configuration.
        rng: The random stream (owned by the caller; seeded for replay).
        step_rad: Largest joint change of one tree extension.
        resolution_rad: Largest joint change between two checked points of an edge.
        max_checks: Checks after which the search gives up.
        goal_bias: Fraction of samples that aim at the other tree's root.
        shortcut_tries: Straight-segment shortcuts attempted on a found route.
    """

    def __init__(self, start: np.ndarray, goal: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                 clear: Check, rng: np.random.Generator, step_rad: float = 0.3, resolution_rad: float = 0.1,
                 max_checks: int = 1500, goal_bias: float = 0.1, shortcut_tries: int = 20) -> None:
        if not (step_rad > 0 and resolution_rad > 0 and max_checks > 0 and 0 <= goal_bias <= 1):
            raise ValueError("step_rad, resolution_rad and max_checks must be > 0 and goal_bias in [0, 1]")
        self.start, self.goal = np.array(start, dtype=float), np.array(goal, dtype=float)
        self.lower, self.upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        self.clear, self.rng = clear, rng
        self.step, self.resolution = step_rad, resolution_rad
        self.max_checks, self.goal_bias, self.shortcut_tries = max_checks, goal_bias, shortcut_tries
        self.checks = 0
        self.route: list[np.ndarray] | None = None  # waypoints after start, goal last; set when done and found
        self.done = False
        self._work: Iterator[None] = self._run()

    def advance(self, checks: int) -> bool:
        """Spends up to ``checks`` clearance checks; True once the search has
        ended (``route`` holds the waypoints, or None when it gave up)."""
        spent = 0
        while not self.done and spent < checks:
            try:
                next(self._work)
            except StopIteration:
                self.done = True
                break
            spent += 1
        return self.done

    # -- the search, as a generator that yields after every check --------------

    def _check(self, q: np.ndarray) -> Iterator[None]:
        self.checks += 1
        self._last = self.clear(q)
        yield

    def _segment_clear(self, a: np.ndarray, b: np.ndarray) -> Iterator[None]:
        """Checks the points of a -> b (a excluded, b included); result in ``_ok``."""
        n = max(1, int(np.ceil(float(np.max(np.abs(b - a))) / self.resolution)))
        for k in range(1, n + 1):
            yield from self._check(a + (b - a) * (k / n))
            if not self._last:
                self._ok = False
                return
        self._ok = True

    def _extend(self, nodes: list[np.ndarray], parents: list[int], toward: np.ndarray) -> Iterator[None]:
        """Grows the tree one step towards ``toward``; ``_added`` is the new node's
        index (None when blocked), ``_reached`` whether it is ``toward`` itself."""
        tree = np.array(nodes)
        near = int(np.argmin(np.max(np.abs(tree - toward), axis=1)))
        q_near = nodes[near]
        gap = float(np.max(np.abs(toward - q_near)))
        self._reached = gap <= self.step
        q_new = toward.copy() if self._reached else q_near + (toward - q_near) * (self.step / gap)
        yield from self._segment_clear(q_near, q_new)
        if not self._ok:
            self._added, self._reached = None, False
            return
        nodes.append(q_new)
        parents.append(near)
        self._added = len(nodes) - 1

    def _run(self) -> Iterator[None]:
        yield from self._segment_clear(self.start, self.goal)
        if self._ok:
            self.route = [self.goal.copy()]
            return
        trees = [([self.start], [-1]), ([self.goal], [-1])]  # (nodes, parent index)
        while self.checks < self.max_checks:
            a, b = trees
            if self.rng.random() < self.goal_bias:
                sample = b[0][0]
            else:
                sample = self.rng.uniform(self.lower, self.upper)
            yield from self._extend(a[0], a[1], sample)
            if self._added is not None:
                q_new, joined = a[0][self._added], None
                # connect: the other tree steps towards the new node until it arrives or is blocked
                while self.checks < self.max_checks:
                    yield from self._extend(b[0], b[1], q_new)
                    if self._added is None:
                        break
                    if self._reached:
                        joined = self._added
                        break
                if joined is not None:
                    path_a = self._branch(a, len(a[0]) - 1)
                    path_b = self._branch(b, joined)
                    path = path_a[::-1] + path_b[1:]  # root of a ... q_new ... root of b
                    if trees[0][0][0] is not self.start:
                        path = path[::-1]
                    yield from self._shortcut(path)
                    return
            trees = [b, a]

    @staticmethod
    def _branch(tree: tuple[list[np.ndarray], list[int]], k: int) -> list[np.ndarray]:
        nodes, parents = tree
        out = []
        while k >= 0:
            out.append(nodes[k])
            k = parents[k]
        return out  # node k ... root

    def _shortcut(self, path: list[np.ndarray]) -> Iterator[None]:
        """Replaces stretches of the route with straight segments where clear."""
        for _ in range(self.shortcut_tries):
            if len(path) <= 2:
                break
            i, j = sorted(self.rng.choice(len(path), size=2, replace=False).tolist())
            if j - i < 2:
                continue
            yield from self._segment_clear(path[i], path[j])
            if self._ok:
                path = path[:i + 1] + path[j:]
        self.route = [q.copy() for q in path[1:]]
