"""Every native source names the project's licence on its first line, in SPDX form: the identifier pyproject.toml
declares (``license = "BSD-3-Clause"``, the text in LICENSE)."""

import tomllib
from pathlib import Path

from tools.csrc_includes import CSRC, sources

_ROOT = Path(__file__).resolve().parents[2]


def test_every_csrc_file_starts_with_the_projects_spdx_line():
    licence = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert licence == "BSD-3-Clause" and "BSD 3-Clause License" in (_ROOT / "LICENSE").read_text()
    line = f"// SPDX-License-Identifier: {licence}"
    files = sources()
    assert len(files) > 100 and any(p.suffix == ".cu" for p in files) and any(p.suffix == ".cc" for p in files)
    bad = [str(p.relative_to(CSRC)) for p in files if p.read_text().split("\n", 1)[0] != line]
    assert not bad, f"csrc files whose first line is not {line!r}:\n" + "\n".join(bad)
