"""Online fine-tuning of a waypoint policy in the simulator (paper §5.5, Table 7).

- :mod:`.inputs` turns an observation into the policy's inputs: the candidate waypoints of
  the agent's depth panorama (by default the trained predictor of
  :mod:`vlnverse.learning.waypoints`, the candidate generator the LLM agents use) and the
  panorama views they look through.
- :mod:`.teacher_env` wraps the env for training: a discrete choice among the candidates
  (or STOP) and, in ``info``, the oracle's choice (Eq. 1's target).
- :mod:`.policy` is a small VLN-BERT-style recurrent cross-modal transformer.
- :mod:`.trainer` rolls it out in vector envs with scheduled sampling and imitation loss;
  :mod:`.agent` evaluates it (``vlnverse eval --agent waypoint_bert``).
"""
