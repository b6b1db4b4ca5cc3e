"""Fused transform plans: a torchvision pipeline (``torchvision.transforms.v2`` or the classic
``torchvision.transforms``, "v1") mapped onto one :func:`spdl_torch.io.decode_images` call per batch.

:func:`fuse` reads the pipeline (a transform, a ``Compose`` or an ``nn.Sequential``, nested ones flattened)
from its start and maps this prefix onto the op (a subclass of these classes only when it runs the library
class's own code: see below):

=================================================================  ======================================
torchvision (v2 or v1 class of the same name)                      decode_images
=================================================================  ======================================
``Resize(S)`` + ``CenterCrop((H, W))`` (any crop size; larger:     ``geometry="eval", resize_shorter=S``
zero padding, as CenterCrop)
``CenterCrop((H, W))``                                             ``geometry="eval", resize_shorter=0``
``Resize(S)`` + ``RandomCrop((H, W), padding, pad_if_needed)``     ``geometry="random_crop", resize_shorter=S,
(zero padding only: ``fill=0``, ``padding_mode="constant"``)       padding, pad_if_needed``
``RandomCrop((H, W), ...)``                                        ``geometry="random_crop", resize_shorter=0``
``Resize(S, max_size=M)`` / ``Resize(None, max_size=M)`` + a crop  ``max_size=M``
``Resize((H, W))``                                                 ``geometry="resize"``
``RandomResizedCrop((H, W), scale, ratio)``                        ``geometry="train", scale, ratio``
``RandomHorizontalFlip(p)`` (anywhere after the geometry)          ``hflip_prob=p``
``RandomVerticalFlip(p)`` (anywhere after the geometry)            ``vflip_prob=p``
``RandomApply([RandomHorizontalFlip(q)], p)`` (or Vertical)        ``hflip_prob=p * q`` (``vflip_prob``)
``Grayscale(n)`` (uint8 or PIL, before or after the geometry),     ``color="gray"`` (tensor rule) or
``RGB()`` (grey -> 3 channels; RGB stays RGB)                      ``"gray_pil"`` (Pillow's), ``num_output_channels``
``ToTensor()`` (v1, of a PIL image: float32 in [0, 1])             ``dtype=torch.float32``
``ToDtype(float32 | bfloat16, scale=True)``,                       ``dtype``
``ConvertImageDtype(float32 | bfloat16)`` (of a uint8 image)
``Normalize(mean, std)`` (after a conversion to float)             ``mean, std``
``PILToTensor()``, ``ToImage()``, ``ToPureTensor()``,              nothing (uint8 output is the default)
``ToDtype(uint8, scale=True)``, ``ConvertImageDtype(uint8)``
No-ops where they stand: ``Identity``, ``nn.Identity``,            nothing (absorbed anywhere, also after
``ToDtype`` / ``ConvertImageDtype`` to the image's own dtype        ``RandomErasing``)
(``scale`` either way), ``ToImage`` / ``ToPureTensor`` of a
tensor, v2's ``ToDtype`` / ``ConvertImageDtype`` /
``ToPureTensor`` of a PIL image, v1's ``RandomApply([])``
``TrivialAugmentWide``, ``RandAugment``, ``AutoAugment``,           ``augment`` rows per sample (Pillow's
``ColorJitter``, ``RandomGrayscale``, ``RandomRotation``,          rows for a PIL image)
``RandomAffine`` (scale: of a PIL image), ``GaussianBlur``,
``RandomAutocontrast / Equalize / Posterize / Solarize / Invert``,
``RandomAdjustSharpness``, ``AugMix``, ``RandomApply`` of these
(uint8 crop)
``RandomErasing`` (after the conversion to float; the last step)   ``erase`` rows per sample
timm's ``RandAugment``, ``AutoAugment``, ``AugMixAugment`` (uint8  ``augment`` rows per sample (Pillow's
crop, after the geometry)                                          affine, fill, ``solarize_add``, mix)
=================================================================  ======================================

Augmentations (:mod:`._policies`; they fuse when ``decode_images`` takes ``augment`` rows) run on the uint8
RGB crop after the resize and flips, before the conversion and normalisation, in the pipeline's order; each
sample's ops are drawn from its seed with torchvision's rules (which op, magnitude bin, sign and
probability; magnitudes that depend on the image size use the crop's output size), so they repeat exactly
whatever the number of threads. :meth:`FusedPlan.sample_augmentation` lists the ops a seed
gets, :meth:`FusedPlan.sample_geometry` the crop box and flips. ``AugMix`` draws its weights (Dirichlet, as ``torch._sample_dirichlet``), chains, ops,
magnitude bins and signs from the sample's seed too and mixes the chains with torchvision's float32
arithmetic (mix rows; ``sample_augmentation`` lists the weights and each chain's ops). The rows compute what
torchvision computes for the image the transform gets. On a tensor: torchvision's tensor kernels; affine ops
take nearest or bilinear interpolation and one grey ``fill``, and ``RandomAffine(scale=...)``, per-channel
fills and other filters do not fuse. On a PIL image (a v1 pipeline before its ``ToTensor`` /
``PILToTensor``): Pillow's, as torchvision calls it there (:mod:`._pil_rows`), identical to torchvision on
every pixel: ``img.rotate`` / ``img.transform(AFFINE)`` with Pillow's double matrix (nearest, bilinear,
bicubic; an RGB fill; ``RandomAffine``'s scale), ``ImageEnhance`` for brightness, contrast, saturation and
sharpness, the hue through Pillow's uint8 HSV, ``ImageOps.autocontrast``, ``convert("L")`` for
``RandomGrayscale``; ``GaussianBlur`` and ``AugMix`` convert a PIL image to a tensor in torchvision and keep the
tensor rows, and ``RandomPosterize(bits=0)`` of a PIL image does not fuse (Pillow's posterize decides). timm's
policies use the Pillow rows (:mod:`._timm_policies`). ``RandomRotation(expand=True)``, an augmentation of a
float or grey image and a flip after an augmentation do not fuse (the reason is given).
Arguments torchvision refuses (in its constructor, or in its forward whenever the op is drawn) or misuses (a
magnitude outside the bins, v2's ``p`` outside [0, 1], an unknown policy, v2's empty ``RandomApply``, a
``RandomRotation`` range with min > max, ``AugMix(alpha=0)``) raise ``ValueError`` naming the transform and the
argument; what torchvision accepts and runs fuses with its meaning or stays unfused with the reason (v1's ``p``
above 1: always, below 0: never; a negative ``RandAugment`` magnitude: a bin from the end; ``num_ops=0``,
``mixture_width=0``: no ops, no chains; ``RandomSolarize`` above 255 of a PIL image: nothing inverted).
``num_magnitude_bins=1`` draws from torchvision's one-bin tables (magnitude 0 for every signed op, Solarize 1.0,
v1 255; Posterize ``int(NaN)`` bits, which torchvision's posterize refuses: a sample that draws it raises
torchvision's error, ``TypeError`` for v2, ``ValueError`` for v1, naming the sample). timm's transforms are
recognised by the module and name of the timm class whose code they run (see :mod:`._timm`).

A subclass of a torchvision, timm or torch class (a ``Compose``, ``nn.Sequential``, ``RandomApply``,
``RandomChoice``, a flip, a crop, a policy, timm's ``AugmentOp`` in a timm policy) fuses only when it runs that
class's own code, decided by method identity, never by ``isinstance`` (:mod:`._classes`:
``type(t).forward is v2.Compose.forward``, ``type(t).__call__ is T1.Compose.__call__``, ...): one that
overrides what the fuser replaces (``forward``, ``__call__``, ``transform``, ``make_params``, a class table, a
method set on the object, a forward hook) runs as written, it and everything after it, and
``FusedPlan.unfused_reason``, the dataset's ``repr`` and warning and ``require_fused=True`` say so
(``"MyCompose overrides forward: runs as written"``). One that defines only its constructor, ``__repr__`` /
``extra_repr`` or names of its own still fuses.

Resizes are bilinear or bicubic, antialiased on tensors (v2's default; ``antialias=False`` does not fuse),
on PIL images (v1 pipelines, below) always, as Pillow's; or NEAREST (torch's index rule on tensors,
Pillow's on PIL images) / NEAREST_EXACT, for which JPEGs decode at full size. Pillow-only filters (BOX,
HAMMING, LANCZOS) do not fuse. A ``Grayscale`` converts the resized RGB pixels (torchvision's rule on
tensors: ``trunc(0.2989 R + 0.587 G + 0.114 B)``; Pillow's ``convert("L")`` on PIL images); placed
before the resize (torchvision then resizes the grey image) the result differs by rounding only. It fuses
while the image is uint8 or PIL (``Grayscale`` of a float image does not fuse); a 1-channel output takes
a ``Normalize`` with one mean and std. ``RandomCrop`` offsets are drawn from the per-sample seed with
torchvision's rule (top, then left, uniform over the valid range); a crop larger than the padded
resized image fails for that sample (``DecodeError``), where torchvision raises ``ValueError``.
``RandomChoice`` does not fuse (the op draws no choice between transforms); ``RandomApply`` fuses around
a single flip or around augmentations that fuse. ``Resize(S)`` computes its output size
as torchvision does (the longer side ``int(S * long / short)``, truncated; v1 and v2 share the rule).
A float32 -> bfloat16 cast (``ToDtype(bfloat16)``, ``ConvertImageDtype(bfloat16)``) after the float
conversion is fused too; ``Normalize`` of bfloat16 then runs in float32 and rounds once (torchvision
computes in bfloat16: within a few bfloat16 steps). The fused output is a plain ``torch.Tensor`` (a fused
``ToImage()`` does not wrap it in ``tv_tensors.Image``).

Input of a pipeline: a pipeline that starts with a classic ``torchvision.transforms``
(v1) transform, or contains v1's ``ToTensor``/``PILToTensor``, expects a ``PIL.Image``, as torchvision's
``ImageFolder`` gives it; everything else (v2 transforms, v2 pipelines ending in v1 transforms that accept
tensors such as ``Normalize``, plain callables) gets a uint8 Tensor[3, H, W]. The fused prefix reproduces the PIL semantics
(antialiased resize, ``ToTensor``'s [0, 1] float32 scale). When nothing fuses, spdl_torch's datasets feed
the unfused pipeline that same input (a PIL image for v1), so a v1 recipe that runs on torchvision's
ImageFolder runs unchanged on ours. The plan's ``rest_input`` and a dataset's ``repr`` say which input the
unfused part gets. ``fuse(transform, input="pil")`` reads a pipeline as given a PIL image whatever its classes
(what torchvision's ``ImageFolder`` and the Hugging Face ``Image`` feature give a v2 pipeline, whose transforms
then run Pillow's kernels): Pillow's rules apply where the fuser knows them (a nearest resize,
``RandomSolarize`` / ``RandomAdjustSharpness`` arguments, ``Grayscale``), v2's conversions of a PIL image are
no-ops until ``PILToTensor`` / ``ToImage``, and a remainder that starts on the PIL image gets PIL images. A plain
wrapper object whose ``__call__`` is ``return self.<name>(image)`` (torchvision's reference
``ClassificationPresetTrain`` / ``Eval``) is read as the pipeline it holds.

The remainder (``FusedPlan.rest``: the first transform that does not fit the table and everything after
it) runs after the op, split in two (:class:`FusedPlan`): a head of deterministic transforms that give
the same values on the batch Tensor[N, C, H, W] as per sample (``Normalize``, ``ToDtype``,
``ConvertImageDtype``, ``Grayscale``, ``CenterCrop``, ``Pad``, ...) runs on the batch, 4 samples per call
(cache-sized chunks, measured faster than the whole batch at once; the result stays
one batch tensor); from the first transform that is not of that kind on (random ones such as
``ColorJitter``, ``RandAugment``, ``RandomErasing``: torchvision v2 draws one set of parameters per call,
so a batched call would give every sample the same draw) it runs per sample, as in torchvision. A v1
remainder that starts
while the image is still a PIL image (e.g. ``ColorJitter`` before ``ToTensor``) gets each sample as a
``PIL.Image``.

Random fused transforms draw from per-sample seeds (see :meth:`FusedPlan.sample_seeds`), not from torch's global RNG,
so a sample's crop and flip depend only on (base seed, epoch, index); crop boxes follow torchvision's
``RandomResizedCrop.get_params`` rule (the same in v1 and v2). Unfused random transforms use torch's
global RNG, as in torchvision.
"""

from ._fuse import fuse
from ._plan import FusedPlan

__all__ = ["FusedPlan", "fuse"]
