"""Training the LLM agents' waypoint predictor (paper A.2.4, §5.3); the predictor itself (its
grid, network and candidates) is :mod:`vlnverse.agents.waypoints.learned`.

- :mod:`.targets`: the training targets read from a scene's navigable map.
- :mod:`.samples`: rendered depth panoramas and their targets (the training data).
- :mod:`.trainer`: ``vlnverse train waypoints`` and the validation figures.
"""
