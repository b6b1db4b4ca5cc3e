"""The shared helper for renamed keyword arguments (``spdl_torch._renamed``): the old name maps to the new one
with a ``SpdlTorchDeprecationWarning`` (a ``DeprecationWarning``) pointing at the caller's line, both names
together are a ``TypeError``, and the wrapped function keeps its signature. The suite turns these warnings into
errors (pytest.ini), so a test that still uses an old name fails unless it asserts the warning."""

import inspect
import warnings

import pytest

from spdl_torch._renamed import deprecated, renamed_kwargs
from spdl_torch.errors import SpdlTorchDeprecationWarning


@renamed_kwargs(old="new", older="newer")
def f(x, *, new=1, newer=2):
    """f's docstring."""
    return x, new, newer


class Module:
    @renamed_kwargs(mode="geometry")
    def __init__(self, *, geometry="eval"):
        self.geometry = geometry


def test_old_name_maps_to_new_with_a_warning_naming_it():
    with pytest.warns(SpdlTorchDeprecationWarning, match=r"^f: old= is deprecated, use new= \(the same values\)$") as rec:
        assert f(0, old=5) == (0, 5, 2)
    assert rec[0].filename == __file__  # the caller's line, not the helper's
    assert issubclass(SpdlTorchDeprecationWarning, DeprecationWarning)
    with pytest.warns(DeprecationWarning, match="older= is deprecated, use newer="):
        assert f(0, older=7) == (0, 1, 7)
    with pytest.warns(DeprecationWarning, match="Module: mode= is deprecated, use geometry="):
        assert Module(mode="train").geometry == "train"


def test_new_names_warn_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(0, new=3, newer=4) == (0, 3, 4)
        assert Module(geometry="resize").geometry == "resize"


def test_both_names_are_a_type_error():
    with pytest.raises(TypeError, match=r"f: got both new= and its deprecated name old=; pass new= only"):
        f(0, old=1, new=2)


def test_signature_and_docstring_are_the_new_ones():
    assert list(inspect.signature(f).parameters) == ["x", "new", "newer"]
    assert f.__doc__ == "f's docstring." and f.__name__ == "f"
    assert f.renamed_kwargs == {"old": "new", "older": "newer"}


def test_deprecated_points_at_the_callers_caller():
    def api():
        deprecated("api is deprecated, use other")

    with pytest.warns(SpdlTorchDeprecationWarning, match="api is deprecated, use other") as rec:
        api()
    assert rec[0].filename == __file__


def test_the_suite_makes_an_unasserted_old_name_an_error():
    # pytest.ini's filterwarnings entry: outside pytest.warns, the warning raises
    with pytest.raises(SpdlTorchDeprecationWarning):
        f(0, old=1)
