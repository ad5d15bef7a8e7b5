"""A problem's module path and MODULE:FUNCTION entry points
(kbh/entry.py): folders first on sys.path, and a function of another
module found there."""
import os
import sys

import pytest

from kbh import entry


def test_module_function_found_on_the_path(tmp_path):
    pkg = tmp_path / "cfgpkg_t"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "make.py").write_text("def args():\n    return [3, 4]\n")
    saved = list(sys.path)
    try:
        entry.module_path([str(tmp_path)])
        assert sys.path[0] == str(tmp_path)
        entry.module_path([str(tmp_path)])	# not twice
        assert sys.path.count(str(tmp_path)) == 1
        f = entry.resolve({}, "init", "cfgpkg_t.make:args")
        assert f() == [3, 4]
        with pytest.raises(KeyError, match="cfgpkg_t.make:nothing"):
            entry.resolve({}, "init", "cfgpkg_t.make:nothing")
        with pytest.raises(KeyError, match="importing no_such_mod_t"):
            entry.resolve({}, "init", "no_such_mod_t:f")
    finally:
        sys.path[:] = saved


def test_module_path_wants_absolute_folders():
    for bad in (["rel/dir"], "/abs", [1], [os.sep, None]):
        with pytest.raises(ValueError, match="absolute folders"):
            entry.module_path(bad)
