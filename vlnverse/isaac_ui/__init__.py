"""Controller logic behind the Isaac Sim extension's "VLNVerse" window.

Every button of the window calls a function here; none of it imports Kit, so it is
tested on any machine. The extension (``exts/vlnverse.isaac``) only draws widgets and
forwards clicks and key presses.
"""
