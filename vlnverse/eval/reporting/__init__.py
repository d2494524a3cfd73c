"""Reporting: ``summary.json`` / ``summary.md``, the LLM usage report, the run's health, trajectory pictures, ``index.html`` and the episode viewer."""
