"""A Drain-style template miner (He et al., "Drain: An Online Log Parsing Approach with
Fixed Depth Tree"), in a few dozen lines, as the comparison method for `gaps`.

Why written here: drain3, the known implementation, pins old versions of its dependencies.
The algorithm is small: a template is routed by its token count and its first token to a
leaf; in the leaf, the cluster with the highest share of equal tokens (a ``<*>`` in the
cluster equals anything) wins if the share reaches the threshold; merging a new member
turns the positions where they differ into ``<*>``.
"""

from __future__ import annotations

from collections import defaultdict

VAR = "<*>"


class DrainTree:
    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self._leaves: dict[tuple[int, str], list[int]] = defaultdict(list)
        self._tokens: dict[int, list[str]] = {}

    @staticmethod
    def _route(tokens: list[str]) -> tuple[int, str]:
        first = tokens[0] if tokens else ""
        if any(c.isdigit() for c in first):
            first = VAR
        return len(tokens), first

    def insert(self, cluster: int, template: str) -> None:
        tokens = template.split()
        self._tokens[cluster] = tokens
        self._leaves[self._route(tokens)].append(cluster)

    def match(self, template: str) -> int | None:
        tokens = template.split()
        best, best_sim = None, self.threshold
        for cluster in self._leaves.get(self._route(tokens), ()):
            sim = _share_equal(self._tokens[cluster], tokens)
            if sim >= best_sim:
                best, best_sim = cluster, sim
        return best

    def merge(self, cluster: int, template: str) -> str:
        """The cluster's template after taking in ``template`` (same token count)."""
        old = self._tokens[cluster]
        new = [a if a == b else VAR for a, b in zip(old, template.split(), strict=False)]
        self._tokens[cluster] = new
        return " ".join(new)


def _share_equal(cluster: list[str], tokens: list[str]) -> float:
    if not tokens:
        return 1.0 if not cluster else 0.0
    same = sum(1 for a, b in zip(cluster, tokens, strict=False) if a in (b, VAR))
    return same / len(tokens)
