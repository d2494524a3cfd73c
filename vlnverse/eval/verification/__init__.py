"""Verification: reading a submitted folder as untrusted data, ``eval verify``'s checks, the re-run of an agent, claims against what can be derived, and results bundles."""
