"""Job size buckets by node count (paper Observation 2, DESIGN.md section 9)."""

from __future__ import annotations

from typing import NamedTuple


class SizeBucket(NamedTuple):
    label: str
    min_nodes: int
    max_nodes: int | None  # None: no upper bound


# The paper's buckets, plus one for anything above 64 nodes (the MLPerf runs used 96).
SIZE_BUCKETS: tuple[SizeBucket, ...] = (
    SizeBucket("1", 1, 1),
    SizeBucket("2", 2, 2),
    SizeBucket("3-4", 3, 4),
    SizeBucket("5-8", 5, 8),
    SizeBucket("9-16", 9, 16),
    SizeBucket("17-32", 17, 32),
    SizeBucket("33-64", 33, 64),
    SizeBucket("65+", 65, None),
)
SIZE_BUCKET_LABELS = tuple(bucket.label for bucket in SIZE_BUCKETS)


def size_bucket(node_count: int) -> str:
    """The label of the bucket a job of `node_count` nodes falls in ("" for zero nodes)."""
    for bucket in SIZE_BUCKETS:
        if node_count >= bucket.min_nodes and (
            bucket.max_nodes is None or node_count <= bucket.max_nodes
        ):
            return bucket.label
    return ""


def bucket_bounds(label: str) -> SizeBucket | None:
    for bucket in SIZE_BUCKETS:
        if bucket.label == label:
            return bucket
    return None
