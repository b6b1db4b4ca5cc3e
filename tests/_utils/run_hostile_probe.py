"""Subprocess half of tests/reliability/test_hostile_inputs.py: decodes each listed file with spdl_torch and Pillow.

    python -m tests._utils.run_hostile_probe MANIFEST.json
MANIFEST.json is a list of {"name", "path"}. Prints one JSON line per file: our outcome, Pillow's, the peak
RSS growth of our decode alone (VmHWM, reset through /proc/self/clear_refs before each decode), and the
seconds it took. Runs apart from pytest so a crash or a hang costs this process, with the file it was on
printed to stderr, not the test session.
"""

import json
import sys
import time
import warnings

import numpy as np
from PIL import Image, ImageOps

import spdl_torch
from spdl_torch.io import decode_image


def _kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def _pillow(path: str):
    """Pillow's RGB decode (EXIF orientation applied to JPEG, as we do), or the exception type name."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                im.load()
                if im.format == "JPEG":
                    im = ImageOps.exif_transpose(im)
                return np.asarray(im.convert("RGB")), None
    except Exception as e:  # noqa: BLE001 - any failure is the reference outcome
        return None, type(e).__name__


def _outcome(ours: np.ndarray, ref: np.ndarray | None) -> str:
    if ref is None:
        return "decoded"
    if ours.shape != ref.shape:
        return "decoded-shape-differs"
    diff = int(np.abs(ours.astype(np.int16) - ref.astype(np.int16)).max()) if ours.size else 0
    if diff == 0:
        return "decoded-equal"
    # JPEG: Debian's libjpeg-turbo 2.1 vs Pillow's bundled 3.x differ by 1 level (README); 2 leaves margin.
    return "decoded-close" if diff <= 2 else "decoded-differs"


def main(manifest: str) -> None:
    entries = json.load(open(manifest))
    can_reset = _reset_peak()
    for e in entries:
        print(f"START {e['name']}", file=sys.stderr, flush=True)
        _reset_peak()
        base = _kb("VmRSS")
        t0 = time.perf_counter()
        message = ""
        ours = None
        try:
            ours = decode_image(e["path"], mode="RGB").permute(1, 2, 0).numpy()
            outcome = None
        except spdl_torch.DecodeError as err:
            outcome, message = "DecodeError", str(err)
        except Exception as err:  # noqa: BLE001 - recorded: anything but DecodeError is a finding
            outcome, message = f"other:{type(err).__name__}", str(err)
        seconds = time.perf_counter() - t0
        growth = _kb("VmHWM") - base if can_reset else -1
        pixels = 0 if ours is None else ours.shape[0] * ours.shape[1]
        ref, ref_error = _pillow(e["path"])
        if outcome is None:
            outcome = _outcome(ours, ref)
        del ours, ref
        reference = "decoded" if ref_error is None else f"error:{ref_error}"
        print(json.dumps({"name": e["name"], "outcome": outcome, "reference": reference, "pixels": pixels,
                          "hwm_growth_kb": growth, "seconds": round(seconds, 4), "message": message[:300]}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
