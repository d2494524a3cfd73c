"""The LLM agents' trained waypoint predictor (paper A.2.4, §5.3): 12-view depth → a heatmap
over 120 headings × 12 distances → at most N waypoints.

- :mod:`.targets`: the polar grid and the targets read from a scene's navigable map.
- :mod:`.samples`: rendered depth panoramas and their targets (the training data).
- :mod:`.model`: the network and its peak picking (needs torch).
- :mod:`.trainer`: ``vlnverse train waypoints`` and the validation figures.
- :mod:`.predictor`: :class:`~.predictor.LearnedWaypoints`, the agents' candidate source.
"""
