"""Installs the tests' network guard (tests/netguard.py) in every Python process the test
session starts: the session puts this folder first on PYTHONPATH."""

import importlib.util
import os

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "netguard.py")
_spec = importlib.util.spec_from_file_location("vlnverse_test_netguard", _path)
_netguard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_netguard)
_netguard.install()
