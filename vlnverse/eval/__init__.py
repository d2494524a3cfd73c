"""Evaluation: per-episode metrics (:mod:`vlnverse.eval.metrics`), their aggregation with
bootstrap confidence intervals (:mod:`vlnverse.eval.aggregate`), and the harness that runs
agents over episode sets."""
