"""The trained waypoint predictor at inference time, the LLM agents' default candidate source
(paper A.2.4, §5.3): 12-view depth → a heatmap over 120 headings × 12 distances → at most N
waypoints. Training it is :mod:`vlnverse.learning.waypoints`'s job.

- :mod:`.grid`: the polar grid of the heatmap.
- :mod:`.net`: the network, its peak picking and peak settings (needs torch).
- :mod:`.predictor`: :class:`~.predictor.LearnedWaypoints`, which turns a checkpoint's peaks into candidates.
"""
