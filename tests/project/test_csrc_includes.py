"""The native code's include convention (csrc/README.md): every project include is rooted at csrc/."""

from tools.csrc_includes import CSRC, fix, rewrites, sources


def test_every_project_include_is_rooted_at_csrc():
    bad = [f"{p.relative_to(CSRC)}: {old!r} -> {new!r}" for p in sources() for old, new in rewrites(p)]
    assert not bad, "includes not rooted at csrc/ (python -m tools.csrc_includes --fix):\n" + "\n".join(bad)
    assert not [p for p in sources() if '#include "../' in p.read_text()]


def test_the_checker_finds_and_fixes_a_relative_include(tmp_path):
    (tmp_path / "core" / "sub").mkdir(parents=True)
    (tmp_path / "core" / "errors.h").write_text("#pragma once\n")
    (tmp_path / "core" / "sub" / "b.h").write_text("#pragma once\n")
    a = tmp_path / "core" / "sub" / "a.cpp"
    a.write_text('#include "b.h"\n#include "../errors.h"\n#include <vector>\n#include "not_ours.h"\n')
    assert rewrites(a, tmp_path) == [("b.h", "core/sub/b.h"), ("../errors.h", "core/errors.h")]
    assert fix(a, tmp_path)
    assert a.read_text() == '#include "core/errors.h"\n#include "core/sub/b.h"\n#include <vector>\n#include "not_ours.h"\n'
    assert rewrites(a, tmp_path) == []
