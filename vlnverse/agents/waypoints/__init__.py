"""Candidate waypoints: where an LLM agent could drive next, and the predictors that propose them.

- :mod:`.candidate`: a :class:`~.candidate.Candidate` (id, heading, distance, view) and the
  turning options offered when no place to move to is proposed.
- :mod:`.predictor`: the predictor interface and predictors by name (``learned``, ``depth``,
  ``module:attr``).
- :mod:`.depth`: the non-learned predictor, from the panorama's free space.
- :mod:`.learned`: the trained predictor at inference time (paper A.2.4), the default;
  training it is :mod:`vlnverse.learning.waypoints`'s job.
"""
