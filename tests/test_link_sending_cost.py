"""The table's cheaper ways to frame and sign its rows give what the reference ways give: the
Merkle root without audit paths is the tree's root, whatever the count of rows."""

from __future__ import annotations

import pytest

from controller.link.frames import _Tree, leaf_hash, tree_root


@pytest.mark.parametrize("n", range(1, 131))
def test_the_root_alone_is_the_trees_root(n) -> None:
    leaves = [leaf_hash(str(i).encode()) for i in range(n)]
    assert tree_root(leaves) == _Tree(leaves).root


def test_a_tree_of_no_rows_is_refused() -> None:
    with pytest.raises(ValueError):
        tree_root([])
