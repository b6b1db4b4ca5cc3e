"""``decode_images``: the fused batch op (decode, crop, resize, flip, normalize, collate) and its fake."""

from __future__ import annotations

import math
import operator
import os
import warnings
from collections.abc import Sequence

import torch

from .._batch_order import before_batch_op
from .._errors import name_sample, translate
from .._limits import DEFAULTS
from ._image import default_max_pixels
from ._results import ImageBatch

__all__ = ["decode_images", "get_num_threads", "set_num_threads"]

_DTYPES = (torch.uint8, torch.float32, torch.bfloat16)
# Row widths of augment programs and erase rows (csrc/core/augment/ops.h; the rows: decode_images' docstring, "Augment
# and erase rows"). This module only checks shapes, the op checks the values.
_AUGMENT_COLUMNS = 8
_ERASE_COLUMNS = 8


@torch.library.register_fake("spdl_torch::decode_images")
def _decode_images_fake(data, *, seeds=None, apply_exif_orientation=True, max_pixels=DEFAULTS["image_pixels"], dct_min_ratio=2.0,
                        partial_decode=True, height, width, geometry="eval", resize_shorter=0, max_size=0,
                        scale=(0.08, 1.0), ratio=(0.75, 4.0 / 3.0), padding=(), pad_if_needed=False,
                        interpolation="bilinear", hflip_prob=0.0, vflip_prob=0.0, augment=None, erase=None, color="rgb",
                        num_output_channels=3, dtype=None, mean=None, std=None, dimension_order="NCHW",
                        pin_memory=False, strict=True):
    for i, d in enumerate(data):
        torch._check(d.dtype == torch.uint8, lambda: f"decode_images: expected uint8 data, got {d.dtype} (sample {i})")
        torch._check(d.dim() == 1, lambda: f"decode_images: expected 1-D data, got {d.dim()} dimensions (sample {i})")
    n = len(data)
    out_dtype = torch.uint8 if dtype is None else dtype
    shape = (n, height, width, num_output_channels) if dimension_order == "NHWC" else (n, num_output_channels, height, width)
    batch = torch.empty(shape, dtype=out_dtype, device=data[0].device)
    ok = torch.empty((n,), dtype=torch.bool, device=data[0].device)
    return batch, ok


# torch.frombuffer warns for read-only buffers such as bytes; the op never writes to its input.
warnings.filterwarnings("ignore", message="The given buffer is not writable", module=__name__)


def _as_tensor(src, i: int, strict: bool) -> torch.Tensor:
    if isinstance(src, torch.Tensor):
        return src
    if isinstance(src, (bytes, bytearray, memoryview)):
        return torch.frombuffer(src, dtype=torch.uint8) if len(src) else torch.empty(0, dtype=torch.uint8)
    if isinstance(src, (str, os.PathLike)):
        try:
            return torch.ops.spdl_torch.read_file(os.fspath(src))
        except RuntimeError as e:
            error = translate(e, None)  # the message names the path
            if strict or not isinstance(error, OSError):
                raise error from None
            # strict=False: an unreadable file is a bad sample like an undecodable one. No bytes: the op
            # reports the slot as failed and zero-fills it.
            return torch.empty(0, dtype=torch.uint8)
    raise TypeError(f"decode_images: expected paths, bytes or 1-D uint8 tensors, got {type(src).__name__} (sample {i})")


def _check_program(name: str, value, shape: tuple) -> None:
    """ValueError unless ``value`` is None or a float32 CPU tensor of ``shape`` (None: any size >= 0)."""
    if value is None:
        return
    want = "[" + ", ".join("K" if d is None else str(d) for d in shape) + "]"
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"decode_images: expected {name} as a float32 tensor of shape {want}, got "
                         f"{type(value).__name__}")
    if (value.dtype != torch.float32 or value.dim() != len(shape)
            or any(d is not None and value.shape[k] != d for k, d in enumerate(shape))):
        raise ValueError(f"decode_images: expected {name} as a float32 tensor of shape {want}, got "
                         f"{value.dtype} of shape {list(value.shape)}")
    if value.device.type != "cpu":
        raise ValueError(f"decode_images: expected {name} on the CPU, got a tensor on {value.device}")


def _int_size(name: str, value) -> int:
    """``value`` as an int: ints, NumPy and torch integers; TypeError for anything else (floats too)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"decode_images: expected an int {name}, got {value!r} ({type(value).__name__})") from None


def decode_images(
    srcs: Sequence[torch.Tensor | bytes | str | os.PathLike],
    *,
    # the samples and their decode
    seeds: torch.Tensor | Sequence[int] | None = None,
    apply_exif_orientation: bool = True,
    max_pixels: int | None = None,
    dct_min_ratio: float = 2.0,
    partial_decode: bool = True,
    # geometry
    height: int,
    width: int,
    geometry: str = "eval",
    resize_shorter: int = 0,
    max_size: int = 0,
    scale: Sequence[float] = (0.08, 1.0),
    ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
    padding: Sequence[int] | None = None,
    pad_if_needed: bool = False,
    interpolation: str = "bilinear",
    # flips
    hflip_prob: float = 0.0,
    vflip_prob: float = 0.0,
    # augmentation
    augment: torch.Tensor | None = None,
    erase: torch.Tensor | None = None,
    # output: colour, dtype, normalisation, dimension order
    color: str = "rgb",
    num_output_channels: int = 3,
    dtype: torch.dtype = torch.uint8,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    dimension_order: str = "NCHW",
    # execution
    device: str | torch.device | None = None,
    pin_memory: bool = False,
    strict: bool = True,
) -> ImageBatch:
    """Decodes N encoded images into one finished batch in a single native call, without the GIL.

    Per sample, in the library's native thread pool (largest predicted cost first), in this order: decode
    (JPEG at the smallest libjpeg-turbo DCT scale that keeps ``dct_min_ratio`` source pixels per output pixel;
    other formats in full) and the EXIF orientation; the geometry (a crop and an antialiased resize, as
    ``torchvision.transforms.v2.functional.resize(..., antialias=True)``); the flips; the ``augment`` rows on the
    uint8 RGB crop; the grey conversion of ``color``; the conversion to ``dtype`` with the fused normalisation,
    written straight into slot ``i`` of the batch; the ``erase`` rows on the finished slot.

    Concurrent calls (e.g. a loader's worker threads) take turns on the shared pool in the order they
    arrive: a call allocates its batch only once the calls before it have started decoding their last
    samples, so a call waiting for the pool holds no batch memory, and the pool goes on to the next call's
    samples without a gap.

    Randomness: sample ``i`` draws from SplitMix64 started at ``seeds[i]`` (crop draws first, then the
    flips, then the augmentation's random values), so its crop and flips depend only on its seed and its image
    size -- never on thread count or scheduling. :meth:`spdl_torch.transforms.FusedPlan.sample_geometry`
    returns the same draws.

    Args:
        srcs: N >= 1 encoded images: 1-D uint8 CPU tensors (no copy), bytes, or file paths.

        The samples and their decode:

        seeds: int64 per sample (tensor [N] or ints); required for ``"train"``, ``"random_crop"``, a flip
            probability > 0 or random erasing.
        apply_exif_orientation: apply the EXIF orientation (JPEG, PNG, WebP) before the geometry.
        max_pixels: per-image pixel limit (``None``: :data:`spdl_torch.io.limits.image_pixels`; <= 0: none).
        dct_min_ratio: JPEG DCT scaling decodes at the smallest of 1/8, 1/4, 1/2, 1 that keeps at least
            this many source pixels per output pixel on both axes (the antialiased resize then does the
            rest). 2 (default, Pillow's ``reducing_gap``) stays >= 40 dB PSNR from torchvision's full-size
            resize; 1 is the fastest (about 30-34 dB on photos); 0 always decodes at full size.
        partial_decode: JPEGs without EXIF rotation decode only the rows and columns the crop's resize
            reads (libjpeg's ``jpeg_skip_scanlines`` / ``jpeg_crop_scanline``; a margin of 1-4 pixels for
            chroma upsampling, columns widened to whole iMCUs on the left) and nothing below the crop but
            the rest of the last restart interval it touches: the same pixels as a full decode, less work.
            Arithmetic-coded JPEGs always decode whole. False decodes the whole (DCT-scaled) image (for
            comparison).

        The geometry (torchvision's transforms and their defaults):

        height, width: output size (>= 1).
        geometry: ``"eval"`` (the default, also for ``None``): resize so the shorter side is
            ``resize_shorter`` (0: no resize; torchvision's ``Resize(int)`` rule), then centre crop ``height x
            width`` (torchvision's ``CenterCrop``, zero padding when the crop is larger) --
            ``Resize(S) + CenterCrop((height, width))``. ``"resize"``: the whole image to ``height x width`` --
            ``Resize((height, width))``. ``"train"``: ``RandomResizedCrop((height, width), scale, ratio)``:
            torchvision's box rule (10 attempts, then the central fallback) with draws from the sample's own
            generator. ``"random_crop"``: resize as ``"eval"`` (``resize_shorter``, ``max_size``), zero
            ``padding``, then ``RandomCrop((height, width), padding, pad_if_needed)``: torchvision's offset rule
            (top, then left, uniform over the valid offsets); a crop larger than the padded image fails for
            that sample, as torchvision's ``RandomCrop`` raises.
        resize_shorter: eval / random_crop: the shorter side before the crop (0: no resize).
        max_size: eval / random_crop: torchvision's ``Resize`` ``max_size`` (0: none): a longer side above it
            after the resize is scaled down to it (the shorter side in proportion, truncated); with
            ``resize_shorter=0`` the longer side becomes ``max_size`` (v2's ``Resize(None, max_size)``).
            Must exceed ``resize_shorter``.
        scale, ratio: train: RandomResizedCrop's area fraction range and aspect ratio (w/h) range.
        padding: random_crop: zero padding ``(left, top, right, bottom)`` in pixels of the resized image.
        pad_if_needed: random_crop: pad both sides of an axis shorter than the crop by the difference.
        interpolation: ``"bilinear"`` (default) or ``"bicubic"``, both antialiased, or ``"nearest"`` /
            ``"nearest_exact"`` (torch's index rules ``floor(o * in / out)`` / ``floor((o + 0.5) * in /
            out)`` in float32, no antialiasing, as torchvision; ``"nearest_exact"`` is also Pillow's
            NEAREST; JPEGs then decode at full size). Against torchvision's
            uint8 resize: bilinear within 1 level; bicubic up to a few levels at sharp edges, because
            torchvision rounds and clamps to uint8 between its horizontal and vertical passes (cutting
            the cubic's negative lobes) while this op keeps the intermediate in float.

        The flips:

        hflip_prob: probability of a horizontal flip per sample.
        vflip_prob: probability of a vertical flip per sample (drawn after the horizontal one).

        The augmentation (the rows: "Augment and erase rows" below):

        augment: per-sample augmentation programs, a float32 ``Tensor[N, K, 8]`` (or ``None``): sample ``i``'s
            K rows ``[code, a0, ..., a6]`` run in order on its uint8 RGB crop after the resize and flips and
            before ``color``, the dtype conversion and the normalisation; code 0 rows are no-ops (padding).
        erase: per-sample erasing, a float32 ``Tensor[N, 8]`` (one box per sample), ``Tensor[N, B, 8]`` (B
            boxes per sample, written in order) or ``None``, written into the finished slot.

        The output:

        color: ``"rgb"`` (default), ``"gray"`` (torchvision's ``Grayscale`` of a uint8 tensor:
            ``trunc(0.2989 R + 0.587 G + 0.114 B)``) or ``"gray_pil"`` (Pillow's ``convert("L")``:
            ``(19595 R + 38470 G + 7471 B + 2**15) >> 16``), of the resized uint8 values.
        num_output_channels: 3 (default; grey replicated into R, G, B) or 1 (grey colors only; then mean
            and std hold one value).
        dtype: ``torch.uint8`` (values 0..255), ``torch.float32`` or ``torch.bfloat16`` (x / 255, then
            ``(x - mean) / std`` when mean/std are given: ``ToDtype(scale=True)`` + ``Normalize``).
        mean, std: per-channel (3 values, or 1 for all) normalization; float dtypes only; every value
            finite, and std's non-zero.
        dimension_order: ``"NCHW"`` (default: Tensor[N, C, H, W], contiguous) or ``"NHWC"`` (Tensor[N, H, W, C],
            contiguous; torchcodec's name and values; ``data.permute(0, 3, 1, 2)`` is the NCHW batch in
            ``torch.channels_last`` memory format).

        The execution:

        device: ``None`` / ``"cpu"``: the CPU path above. A CUDA device: nvJPEG decodes the JPEGs on the GPU and
            the geometry (the same boxes and flips for the same seeds), the antialiased resize (torch's
            ``_upsample_*_aa``, from the full-size decode: no DCT scaling) and the dtype conversion and
            normalisation run there; ``data`` is on that device (``ok`` on the CPU). JPEG only (other
            formats and CMYK JPEGs are a ``DecodeError`` for that sample); the eval / resize / train geometries,
            bilinear / bicubic, horizontal flips and RGB output only; ``pin_memory``, ``dct_min_ratio`` and
            ``partial_decode`` do not apply. Needs the CUDA variant built with nvJPEG
            (``spdl_torch.build_info()["nvjpeg"] == "1"``): compiled, not yet run on a GPU (see docs/cuda.md).
        pin_memory: allocate the batch in pinned (page-locked) memory from torch's caching host
            allocator; needs a CUDA runtime.
        strict: raise on the first bad sample (True), or zero-fill bad slots and mark them False in ``ok``:
            samples that cannot be decoded and paths that cannot be read (missing, a directory, no
            permission, not a regular file) alike.

    Augment and erase rows (``augment``, ``erase``):
        An ``augment`` row is 8 float32 values: the op's code, then its arguments in order (``aK``: the row's
        column K + 1; an argument of several values takes that many columns; the columns after the last argument
        are not read). The ops named after ``torchvision.transforms.v2.functional``'s functions equal them on a
        uint8 image (within 1 level, or >= 40 dB PSNR); ``fill``, ``pil_*`` and ``solarize_add`` follow Pillow
        (what torchvision's transforms and timm's augmentation ops do to a PIL image); the mix rows compute AugMix's
        weighted sum of chains. A value outside its argument's rule raises ``ValueError`` naming the row
        (``augment[i, k]``), the op, the argument and the rule. The library's own table
        (``torch.ops.spdl_torch.augment_op_table()``) is the source of this one:

        =====================  ====  ===================================================================================
        op                     code  what it does; its arguments
        =====================  ====  ===================================================================================
        ``identity``           0     Leaves the image as it is (code 0 rows pad a shorter program).
        ``affine``             1     torchvision's affine(img, angle, translate, scale=1.0, shear, interpolation, fill)
                                     about the image centre (rotate(img, a) with expand=False is affine(angle=-a)). a0
                                     ``angle``: degrees, clockwise (a finite number). a1..a2 ``translate``: pixels (x,
                                     y) (each a finite number). a3..a4 ``shear``: degrees (x, y) (each a number in (-90,
                                     90)). a5 ``interpolation``: torchvision's InterpolationMode (0 (nearest) or 1
                                     (bilinear); default nearest). a6 ``fill``: the grey level of the pixels from
                                     outside the image; None: torchvision's fill=None (zero padding without the fill
                                     mask's blend) (a number in [0, 255], or -1 for None; default None).
        ``adjust_brightness``  2     torchvision's adjust_brightness. a0 ``brightness_factor``: 0: black, 1: the image
                                     (a finite number >= 0).
        ``adjust_contrast``    3     torchvision's adjust_contrast. a0 ``contrast_factor``: 0: the mean grey, 1: the
                                     image (a finite number >= 0).
        ``adjust_saturation``  4     torchvision's adjust_saturation. a0 ``saturation_factor``: 0: grey, 1: the image (a
                                     finite number >= 0).
        ``adjust_hue``         5     torchvision's adjust_hue. a0 ``hue_factor``: the turn of the hue, in turns (a
                                     number in [-0.5, 0.5]).
        ``adjust_sharpness``   6     torchvision's adjust_sharpness. a0 ``sharpness_factor``: 0: smoothed, 1: the image
                                     (a finite number >= 0).
        ``posterize``          7     torchvision's posterize. a0 ``bits``: the high bits kept (an integer in [0, 8]).
        ``solarize``           8     torchvision's solarize: a value >= threshold is inverted. a0 ``threshold``: on
                                     0..255 (a finite number <= 255).
        ``autocontrast``       9     torchvision's autocontrast (per channel).
        ``equalize``           10    torchvision's equalize (per channel).
        ``invert``             11    torchvision's invert.
        ``rgb_to_grayscale``   12    torchvision's rgb_to_grayscale(num_output_channels=3).
        ``gaussian_blur``      13    torchvision's gaussian_blur (reflect padding, folded again where it reaches past a
                                     small image, where torch's reflect padding raises). a0..a1 ``kernel_size``: pixels
                                     (x, y) (each an odd integer in [1, 1001]). a2..a3 ``sigma``: pixels (x, y) (each a
                                     finite number > 0).
        ``fill``               14    Sets the fill colour of the sample's following pil_affine rows (black at the start
                                     of each program, Pillow's default). a0..a2 ``color``: R, G, B (each an integer in
                                     [0, 255]).
        ``pil_affine``         15    Pillow's img.transform(img.size, Image.AFFINE, data, resample, fillcolor=the fill
                                     colour): output pixel (x, y) samples the input at (a x' + b y' + c, d x' + e y' +
                                     f), x' = x + 0.5, y' = y + 0.5. a0..a5 ``data``: Pillow's AFFINE data (a, b, c, d,
                                     e, f), each plus the parts of the pil_affine_low rows before it (in double) (each a
                                     finite number). a6 ``resample``: Pillow's filter (0 (NEAREST), 1 (BILINEAR) or 2
                                     (BICUBIC)).
        ``solarize_add``       16    timm's solarize_add: a value v below threshold becomes min(255, v + add). a0
                                     ``add``: added to the values below the threshold (an integer in [0, 255]). a1
                                     ``threshold``: on 0..255 (256: every value) (a number in [0, 256]).
        ``mix_begin``          17    Begins AugMix's mix: the image becomes the chains' source, the float32 sum = weight
                                     * image. a0 ``weight``: the original image's weight (a finite number >= 0).
        ``mix_add``            18    Ends a chain: sum += weight * image (float32), then the image is the source again.
                                     a0 ``weight``: the chain's weight (a finite number >= 0).
        ``mix_end``            19    Ends the mix: mixed = trunc(clamp(sum, 0, 255)), the image = Pillow's
                                     Image.blend(source, mixed, alpha). a0 ``alpha``: 1: the mix itself (torchvision's
                                     AugMix); below 1: timm's AugMixAugment blend (a number in [0, 1]; default 1).
        ``pil_affine_low``     20    Adds parts of the AFFINE data of the sample's next pil_affine row, in double
                                     (cleared there): Pillow's double coefficients travel exactly as float32 parts hi
                                     (the pil_affine row) + mid + lo (a row each). a0..a5 ``data``: parts of (a, b, c,
                                     d, e, f) (each a finite number).
        ``pil_enhance``        21    Pillow's ImageEnhance.<enhancer>(img).enhance(factor). a0 ``enhancer``:
                                     ImageEnhance's class (0 (Brightness), 1 (Color), 2 (Contrast) or 3 (Sharpness)). a1
                                     ``factor``: 0: the enhancer's degenerate image, 1: the image (a finite number >=
                                     0).
        ``pil_hue``            22    torchvision's adjust_hue of a PIL image: convert("HSV"), H += shift modulo 256,
                                     convert("RGB"). a0 ``shift``: int(hue_factor * 255) modulo 256 (an integer in [0,
                                     255]).
        ``pil_autocontrast``   23    Pillow's ImageOps.autocontrast(img) (per channel).
        =====================  ====  ===================================================================================

        An ``erase`` row (e0..e7): e0 ``mode``: off: nothing (the padding of a sample's shorter list of boxes; the other
        columns are not read); value: `value` per channel; random: normal(0, 1) values drawn from the sample's seed
        (RandomErasing's value="random"; each box of a sample from its own stream) (0 (off), 1 (value) or 2 (random)).
        e1 ``top``: the box's first row (an integer in [0, 16777216]). e2 ``left``: the box's first column (an integer
        in [0, 16777216]). e3 ``height``: rows (the box is clipped to the slot, as a slice is) (an integer in [0,
        16777216]). e4 ``width``: columns (an integer in [0, 16777216]). e5..e7 ``value``: per channel (a 1-channel
        slot: the first), in the slot's values: float32 as is, bfloat16 rounded to nearest even, uint8 truncated after a
        clamp to [0, 255] (each a number (not NaN); default 0).

        The mix rows nest within a sample's program: ``mix_begin``, then each chain's rows followed by its
        ``mix_add``, then ``mix_end``; a mix row out of that order, a mix inside a mix or a program that ends
        inside a mix is rejected naming the row. An ``erase`` row is written into the finished slot (after the
        normalisation, in ``dtype``'s values, as ``torchvision.transforms.v2.functional.erase``); mode random needs
        ``seeds``.

    Defaults that differ from torchvision: none of the geometry's (the transforms' own defaults);
    ``apply_exif_orientation=True`` applies the EXIF orientation, as Pillow-based loading
    (``ImageFolder`` + ``ImageOps.exif_transpose``) does, where ``torchvision.io.decode_jpeg`` does not.

    Returns:
        :class:`ImageBatch` ``(data, ok)`` whatever ``strict`` is: ``data`` Tensor[N, C, height, width] of
        ``dtype`` (RGB, or grey; C = ``num_output_channels``; ``dimension_order="NHWC"``: [N, height, width, C]);
        ``ok`` a bool Tensor[N], False for samples that failed (zero-filled; only with ``strict=False``).

    Raises:
        spdl_torch.DecodeError: ``strict=True`` and a sample is corrupt, truncated, of an unknown format or
            over ``max_pixels``; the message starts with the sample's path (``<path>: ``) when it was given
            as a path, else with ``sample <i>: ``, and carries the decoder's reason; ``sample_index`` is
            ``i`` and ``path`` the path (``None`` for bytes and tensors). With
            ``partial_decode=True`` (the default) a JPEG is read only down to the last row the crop needs
            (with restart markers: to the marker after it): damage entirely below is neither read nor
            reported, so with random crops (``geometry="train"``) a file truncated near its end fails only for
            the crops that reach the damage. Damage inside the crop that no decoder can detect there (a
            flipped bit that leaves the code lengths intact) gives damaged pixels in either mode.
        OSError (FileNotFoundError, IsADirectoryError, ...): ``strict=True`` and a path cannot be read.
        TypeError: ``srcs`` is a single image (a path, bytes or tensor) instead of a sequence of them, a
            sample of another type, or a non-integer size.
        ValueError: invalid arguments (sizes, geometry, ranges, dtype, dimension order, missing seeds, mean/std
            with uint8, a NaN or infinite mean or std, a zero std; ``augment`` / ``erase`` of another dtype or
            shape, an unsupported op code (``augment code N not supported``) or an argument out of its range:
            the message names the row, ``augment[i, k]`` / ``erase[i]`` / ``erase[i, b]``).
        RuntimeError: ``pin_memory=True`` without a CUDA runtime; ``device="cuda"`` without CUDA, on the CPU
            variant of spdl_torch or without nvJPEG (the message says which); a bug in spdl_torch (never the
            data's fault; spdl_torch's ``InternalError``), raised even with ``strict=False`` instead of
            reporting the sample as corrupt.
    """
    if dimension_order not in ("NCHW", "NHWC"):
        raise ValueError(f"decode_images: expected dimension_order 'NCHW' or 'NHWC', got {dimension_order=}")
    if geometry is None:
        geometry = "eval"
    if isinstance(srcs, (str, os.PathLike, bytes, bytearray, memoryview, torch.Tensor)):
        raise TypeError(f"decode_images: expected a sequence of images (paths, bytes or 1-D uint8 tensors), got a "
                        f"single {type(srcs).__name__}; pass [src] for one image")
    height, width, resize_shorter, max_size, num_output_channels = (
        _int_size(name, value) for name, value in (("height", height), ("width", width),
                                                   ("resize_shorter", resize_shorter), ("max_size", max_size),
                                                   ("num_output_channels", num_output_channels)))
    padding = [] if padding is None else [_int_size("padding", p) for p in padding]
    if len(srcs) == 0:
        raise ValueError(f"decode_images: expected at least one image, got {len(srcs)=}")
    if dtype not in _DTYPES:
        raise ValueError(f"decode_images: {dtype=} is not supported; expected uint8, float32 or bfloat16")
    for name, values in (("mean", mean), ("std", std)):
        for c, v in enumerate(() if values is None else values):
            if not math.isfinite(float(v)) or (name == "std" and float(v) == 0.0):
                raise ValueError(f"decode_images: expected finite {name} values{' != 0' if name == 'std' else ''}, "
                                 f"got {name}[{c}]={float(v)} in {name}={list(values)}")
    data = [_as_tensor(s, i, strict) for i, s in enumerate(srcs)]
    _check_program("augment", augment, (len(srcs), None, _AUGMENT_COLUMNS))
    boxes = isinstance(erase, torch.Tensor) and erase.dim() == 3  # [N, B, 8]: B boxes per sample
    _check_program("erase", erase, (len(srcs), None, _ERASE_COLUMNS) if boxes else (len(srcs), _ERASE_COLUMNS))
    if seeds is not None and not isinstance(seeds, torch.Tensor):
        seeds = torch.tensor(list(seeds), dtype=torch.int64)
    limit = default_max_pixels() if max_pixels is None else int(max_pixels)
    scale, ratio = [float(s) for s in scale], [float(r) for r in ratio]
    mean = None if mean is None else [float(m) for m in mean]
    std = None if std is None else [float(s) for s in std]
    dev = None if device is None else torch.device(device)
    if dev is not None and dev.type == "cuda":
        from ._cuda_batch import decode_images_cuda

        gpu_only = {"vflip_prob": vflip_prob != 0.0, "max_size": max_size != 0, "padding": any(padding),
                    "pad_if_needed": pad_if_needed, "color": color != "rgb", "num_output_channels": num_output_channels != 3,
                    "geometry": geometry not in ("eval", "resize", "train"),
                    "interpolation": interpolation not in ("bilinear", "bicubic"),
                    "augment": augment is not None, "erase": erase is not None}
        unsupported = [k for k, used in gpu_only.items() if used]
        if unsupported:
            raise ValueError(f"decode_images: device={str(dev)!r} does not support {', '.join(unsupported)} "
                             "(the GPU path has the eval/resize/train geometries, bilinear/bicubic, horizontal "
                             "flips, RGB output): decode on the CPU and copy")
        batch, ok = decode_images_cuda(data, srcs, dev, dict(
            seeds=seeds, apply_exif_orientation=apply_exif_orientation, max_pixels=limit, height=height, width=width,
            geometry=geometry, resize_shorter=resize_shorter, scale=scale, ratio=ratio, interpolation=interpolation,
            hflip_prob=float(hflip_prob), dtype=dtype, mean=mean, std=std, dimension_order=dimension_order,
            pin_memory=pin_memory, strict=strict))
        return ImageBatch(batch, ok)
    if dev is not None and dev.type != "cpu":
        raise ValueError(f"decode_images: expected device None, 'cpu' or a CUDA device, got {str(device)!r}")
    before_batch_op()
    try:
        batch, ok = torch.ops.spdl_torch.decode_images(
            data,
            seeds=seeds, apply_exif_orientation=apply_exif_orientation, max_pixels=limit,
            dct_min_ratio=float(dct_min_ratio), partial_decode=bool(partial_decode),
            height=height, width=width, geometry=geometry, resize_shorter=resize_shorter, max_size=max_size,
            scale=scale, ratio=ratio, padding=padding, pad_if_needed=bool(pad_if_needed), interpolation=interpolation,
            hflip_prob=float(hflip_prob), vflip_prob=float(vflip_prob),
            augment=augment, erase=erase,
            color=color, num_output_channels=num_output_channels, dtype=dtype, mean=mean, std=std,
            dimension_order=dimension_order,
            pin_memory=pin_memory, strict=strict,
        )
    except RuntimeError as e:
        paths = [os.fspath(s) if isinstance(s, (str, os.PathLike)) else None for s in srcs]
        raise name_sample(translate(e, None), paths) from None
    return ImageBatch(batch, ok)


def set_num_threads(n: int) -> None:
    """Sets the size of spdl_torch's shared native thread pool (used by ``decode_images``); 0 restores the
    default: ``$SPDL_TORCH_NUM_THREADS`` or the number of CPUs this process may use (sched_getaffinity)."""
    if n < 0:
        raise ValueError(f"set_num_threads: expected n >= 0, got {n=}")
    torch.ops.spdl_torch.set_num_threads(int(n))


def get_num_threads() -> int:
    """The size of spdl_torch's shared native thread pool."""
    return int(torch.ops.spdl_torch.get_num_threads())
