"""Default prompts of the Describer / Verifier / Synthesizer pipeline and the dialogue
oracle (paper Appendix C.2.2), as editable text files.

The files use ``string.Template`` placeholders (``${target}``); a literal dollar sign is
written ``$$``. Copy this folder, edit it, and pass it as ``prompts_dir`` to override.
"""
