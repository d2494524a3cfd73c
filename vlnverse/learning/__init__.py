"""Learned baselines and their training (paper §5.2 offline, §5.5 online).

- :mod:`.prerender` renders the observations along the oracle's actions of a dataset split
  into chunked frame shards (``vlnverse dataset prerender``); :mod:`.frames` reads them.
- :mod:`.models` holds the VLN-CE Seq2Seq and CMA policies, :mod:`.imitation` trains them
  with teacher forcing (``vlnverse train seq2seq|cma|gama``), :mod:`.agent` evaluates them.
- :mod:`.online` fine-tunes a waypoint policy in the simulator (``vlnverse train
  waypoint_bert --online``).

Everything that needs torch imports it through :func:`vlnverse.weights.require_torch`
(the ``train`` extra); the pre-rendering and frame reading need numpy only.
"""
