"""``load_file``: a Python file of the repository that is no importable module (an example, a fuzz target) loaded
by its path, as the tests that check it need it."""

import importlib.util
import os
from types import ModuleType


def load_file(path: str | os.PathLike, name: str) -> ModuleType:
    """The module the file at ``path`` defines, run once under ``name`` (not added to ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
