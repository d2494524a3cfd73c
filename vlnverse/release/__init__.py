"""The benchmark at paper scale: corpus, every task's episodes, statistics, card and checksums
(``vlnverse release build``; see :mod:`vlnverse.release.build`)."""

from vlnverse.release.build import ReleaseConfig, ReleaseSummary, build_release

__all__ = ["ReleaseConfig", "ReleaseSummary", "build_release"]
