"""The Claude Code face of same-session loops: a plugin (user scope) or project settings.

``layout`` renders what it consists of, ``scopes`` says where each part goes, ``installer``
writes it and reverts it from its ``manifest``, ``status`` checks it. ``arm`` is what the
``/ralph-loop`` command runs inside a session: this ``__init__`` must stay import-free.
"""
