"""Policies served elsewhere, over the openpi websocket policy protocol: the ``remote``
agent (:mod:`.client`) and ``vlnverse serve-policy`` (:mod:`.server`)."""
