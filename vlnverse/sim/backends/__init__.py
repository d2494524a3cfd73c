"""Simulator backends: ``bullet`` (embedded PyBullet, CPU) and ``isaac`` (Isaac Sim 5.x).

Backends are registered lazily in :data:`vlnverse.sim.backend.BACKENDS`; importing this
package imports neither engine.
"""
