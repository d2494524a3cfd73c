"""Without torch, training and learned agents fail with the install command; nothing else needs it."""

from __future__ import annotations

import sys

import pytest

from vlnverse.errors import DependencyNotInstalled


def test_missing_torch_names_the_train_extra(monkeypatch, tmp_path):
    for name in [m for m in sys.modules if m == "torch" or m.startswith(("torch.", "vlnverse.learning.models."))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torch", None)
    from vlnverse.eval.registry import make_agent
    from vlnverse.learning.torch_support import require_torch

    with pytest.raises(DependencyNotInstalled, match=r"pip install 'vlnverse\[train\]'"):
        require_torch()
    with pytest.raises(DependencyNotInstalled, match="torch"):
        make_agent("cma", {"checkpoint": str(tmp_path / "none.pt")})
