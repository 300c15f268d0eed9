"""Test support: make distributions of this environment importable in a fresh virtual
environment, offline (no index, no build), by linking them in.

``tests/test_packaging.py`` (the built wheel's environment) and ``tests/test_learner_commands.py``
(the learner's ``.venv`` with only the ``learn`` extra) both build such environments.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path


def link_into(site: Path, dists: list[metadata.Distribution]) -> None:
    """Make ``dists`` (of this environment) importable in the environment of ``site``: a link
    per top-level entry (package, module, dist-info) of each. Scripts are not linked."""
    for dist in dists:
        assert dist.files is not None, f"{dist.name} has no RECORD"
        tops = {f.parts[0] for f in dist.files if f.parts[0] not in ("..", "__pycache__")}
        for top in tops:
            source, target = Path(str(dist.locate_file(top))), site / top
            if source.exists() and not target.exists():
                target.symlink_to(source, target_is_directory=source.is_dir())
