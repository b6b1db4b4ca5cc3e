"""``ImageFolder``: torchvision's folder layout, decoded by :func:`spdl_torch.io.decode_image`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset
from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

from ._fused import FusedBatchMixin

__all__ = ["ImageFolder", "default_loader"]


def default_loader(path: str):
    """Decode the image file at ``path`` to a ``torch.uint8`` tensor of shape ``[3, H, W]`` (RGB)."""
    from spdl_torch.io import decode_image  # lazy: keeps this module importable without the native lib

    return decode_image(path)


class ImageFolder(FusedBatchMixin, Dataset):
    """Images arranged as ``root/<class>/**/<file>``, one class per top-level sub-directory.

    Classes, their indices and the sample list follow :class:`torchvision.datasets.ImageFolder` exactly
    (this class calls torchvision's ``find_classes`` and ``make_dataset``): classes are the sorted names
    of the directories directly under ``root``, indexed from 0; samples are the files below each class
    directory (symlinks followed, walked in sorted order) whose name ends with one of torchvision's
    ``IMG_EXTENSIONS`` (case-insensitive), or, if ``is_valid_file`` is given, for which it returns True.

    The difference from torchvision is the default ``loader``: :func:`spdl_torch.io.decode_image`, a
    native decoder that releases the GIL, so the dataset scales on the threads of
    :class:`spdl_torch.DataLoader`.

    Args:
        root (str or pathlib.Path): root directory.
        transform (callable, optional): applied to the loaded image: a ``torchvision.transforms.v2``
            transform (or any callable) of a ``uint8`` ``[3, H, W]`` tensor, or a classic
            ``torchvision.transforms`` (v1) recipe, which gets a ``PIL.Image`` in RGB mode, as from
            torchvision's ImageFolder (v1 when the pipeline starts with a v1 transform or holds v1's
            ``ToTensor`` / ``PILToTensor``; ``repr(ds)`` says which input the unfused part gets).
        target_transform (callable, optional): applied to the class index.
        loader (callable, optional): ``loader(path) -> image``. Default: :func:`default_loader`, which
            returns a ``torch.uint8`` tensor of shape ``[3, H, W]`` in RGB channel order (grayscale,
            palette and alpha images are converted to RGB; the tensor may be a channels-last view, as
            torchvision's decoders return) and raises :class:`spdl_torch.DecodeError` on a corrupt file.
            With the default loader, a classic ``torchvision.transforms`` (v1) pipeline that does not fuse
            gets the decoded image as a ``PIL.Image`` (mode ``"RGB"``) instead, as torchvision's loader
            gives it; ``max_pixels`` / ``max_bytes`` apply. A loader of your own (even torchvision's) turns
            fusion off and is used as it is.
        is_valid_file (callable, optional): ``is_valid_file(path) -> bool`` used instead of the extension
            check to select files.
        allow_empty (bool): if ``True``, class directories without any valid file are kept as classes
            (with no samples); if ``False`` (default) they raise ``FileNotFoundError``.
        seed (int, optional): base seed of the per-sample random streams of a fused transform (``None``:
            drawn from torch's global RNG once); with :meth:`set_epoch`, sample ``i`` of epoch ``e`` always
            gets the same random crop and flip.
        max_pixels (int, optional, keyword): decode no image with more than this many pixels
            (:class:`spdl_torch.DecodeError`); ``None``: :data:`spdl_torch.io.limits.image_pixels` at each fetch
            (set it to change the default, like Pillow's ``Image.MAX_IMAGE_PIXELS``); 0 or less: no limit.
            Applies to the default loader only.
        max_bytes (int, optional, keyword): read no file larger than this many bytes (``OSError`` with
            errno ``EFBIG``, before reading); ``None``: :data:`spdl_torch.io.limits.image_bytes` at each
            fetch (default 0: no limit). Applies to the default loader only.
        warn_unfused (bool, keyword): warn (``UserWarning``, once, at construction) when the transform is
            not fully fused, naming the first transform that is not and what it costs. Default ``True``.
        require_fused (bool, keyword): raise ``ValueError`` (naming the first unfused transform) unless the
            whole transform is fused. Default ``False``.

    Fused batches: with the default loader and a torchvision (v2 or v1) transform whose prefix
    :func:`spdl_torch.transforms.fuse` maps onto :func:`spdl_torch.io.decode_images` (e.g. ``Resize(256),
    CenterCrop(224), ToDtype(float32, scale=True), Normalize(...)``, ``RandomResizedCrop(224),
    RandomHorizontalFlip()``, or the classic ``Resize(256), CenterCrop(224), ToTensor(), Normalize(...)``),
    ``__getitems__(indices)`` decodes a whole batch in one native call and returns
    ``(image, target)`` pairs whose images are views of one batch tensor; ``spdl_torch.datasets.collate``
    returns that tensor without a copy. ``ds[i]`` then runs the same op for one sample, so single and batched
    fetches give identical images. Random transforms draw from per-sample seeds (base seed, epoch, index),
    not from torch's global RNG. The unfused remainder runs after the op (see :mod:`spdl_torch.transforms`);
    ``repr(ds)`` shows the fused plan and the remainder.

    Attributes:
        classes (list[str]): class names, sorted.
        class_to_idx (dict[str, int]): class name -> class index.
        samples (list[tuple[str, int]]): ``(path, class_index)`` per sample.
        imgs (list[tuple[str, int]]): alias of ``samples`` (as in torchvision).
        targets (list[int]): class index per sample.

    Raises:
        FileNotFoundError: ``root`` has no class directory, or a class has no valid file and
            ``allow_empty`` is ``False``.
        ValueError: ``require_fused=True`` and the transform is not fully fused (or a custom loader).
        TypeError: a non-integer ``max_pixels`` / ``max_bytes``.

    ``ds[i]`` returns ``(image, target)``: ``image = transform(loader(path))`` (a ``uint8`` tensor
    ``[3, H, W]`` with the default loader and no transform; a PIL image for a v1 transform that fuses
    nothing) and ``target = target_transform(class_index)`` (an ``int`` by default).
    """

    def __init__(
        self,
        root: str | Path,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        loader: Callable[[str], Any] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
        seed: int | None = None,
        *,
        max_pixels: int | None = None,
        max_bytes: int | None = None,
        warn_unfused: bool = True,
        require_fused: bool = False,
    ) -> None:
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        self.transform = transform
        self.target_transform = target_transform
        self.loader = default_loader if loader is None else loader
        self.extensions = IMG_EXTENSIONS if is_valid_file is None else None
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(
            self.root, self.class_to_idx, self.extensions, is_valid_file, allow_empty=allow_empty
        )
        self.imgs = self.samples
        self.targets = [target for _, target in self.samples]
        fusable = loader is None or loader is default_loader
        self._init_fused(seed, fusable=fusable)
        self._init_fusion(warn_unfused, require_fused, fusable, max_pixels, max_bytes)

    def find_classes(self, directory: str | Path) -> tuple[list[str], dict[str, int]]:
        """``(classes, class_to_idx)`` of ``directory``: torchvision's ``find_classes``. Override it in a
        subclass to change the classes, as with torchvision's ``DatasetFolder``."""
        return find_classes(directory)

    @staticmethod
    def make_dataset(
        directory: str | Path,
        class_to_idx: dict[str, int],
        extensions: tuple[str, ...] | None = None,
        is_valid_file: Callable[[str], bool] | None = None,
        allow_empty: bool = False,
    ) -> list[tuple[str, int]]:
        """The ``(path, class_index)`` samples: torchvision's ``make_dataset`` (overridable, as in
        torchvision's ``DatasetFolder``)."""
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty=allow_empty)

    def __len__(self) -> int:
        return len(self.samples)

    def _path(self, index: int) -> str:
        return self.samples[index][0]

    def _target(self, index: int) -> Any:
        return self.samples[index][1]

    def _load(self, path: str) -> Any:
        return self._decode(path) if self.loader is default_loader else self.loader(path)

    def __repr__(self) -> str:
        plan = self._plan_text().replace("\n", "\n    ")
        return (f"{type(self).__name__}(root={str(self.root)!r}, num_classes={len(self.classes)}, "
                f"num_samples={len(self)},\n    {plan}\n)")
