"""Kit extension ``vlnverse.isaac``: the "VLNVerse" window (Tools → VLNVerse).

Kit imports this module and instantiates every ``omni.ext.IExt`` subclass it exposes.
The module is named ``vlnverse_isaac`` (not ``vlnverse.isaac``) so it never shadows the
``vlnverse`` library package it drives.
"""

from .extension import VLNVerseExtension

__all__ = ["VLNVerseExtension"]
