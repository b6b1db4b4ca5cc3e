"""``HFImageDataset``: a Hugging Face ``datasets.Dataset`` with an image column, decoded by the fused batch op.

The image column is read from the dataset's Arrow table, never decoded in Python: for each row, the encoded
bytes of its ``{"bytes", "path"}`` struct (what the ``Image`` feature stores, ``decode=True`` or not) as a
zero-copy uint8 tensor over the Arrow buffer (memory-mapped for a dataset loaded from files), or, where the row
holds a path only (``load_dataset("imagefolder")`` keeps the paths of local files), the file read natively.
The dataset's indices mapping (``select``, ``shuffle``, ``filter``, ``train_test_split``) is followed.
"""

from __future__ import annotations

import bisect
import errno
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

from ._fused import FusedBatchMixin
from ._pil_wide import as_pillow_decodes

__all__ = ["HFImageDataset"]


def _check_dataset(dataset: Any) -> None:
    """Raises ``TypeError`` unless ``dataset`` is a map-style ``datasets.Dataset``."""
    try:
        import datasets
    except ImportError:
        raise ImportError("HFImageDataset needs Hugging Face's datasets: pip install 'spdl_torch[hf]' "
                          "(or pip install datasets)") from None
    if isinstance(dataset, datasets.DatasetDict):
        raise TypeError(f"HFImageDataset: expected a datasets.Dataset, got a DatasetDict with the splits "
                        f"{sorted(dataset)}: pass one of them (e.g. dataset['train'])")
    if not isinstance(dataset, datasets.Dataset):
        raise TypeError(f"HFImageDataset: expected a datasets.Dataset (map-style), got {type(dataset).__name__}")


def _image_field(dataset: Any, column: str) -> None:
    """Raises ``ValueError`` unless ``column`` holds images (an ``Image`` feature, or the struct of binary bytes
    and a path it is stored as)."""
    import datasets
    import pyarrow as pa

    if column not in dataset.column_names:
        raise ValueError(f"HFImageDataset: image_column={column!r} is not a column of the dataset "
                         f"(columns: {dataset.column_names})")
    feature = dataset.features[column]
    arrow = dataset.data.schema.field(column).type
    is_struct = pa.types.is_struct(arrow) and {arrow.field(i).name for i in range(arrow.num_fields)} >= {"bytes", "path"}
    if not (isinstance(feature, datasets.Image) or is_struct):
        raise ValueError(f"HFImageDataset: image_column={column!r} holds {feature!r}, not images (an Image feature, "
                         "or a struct of 'bytes' and 'path')")
    kind = arrow.field("bytes").type if is_struct else None
    if kind is not None and not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        raise ValueError(f"HFImageDataset: image_column={column!r} holds its bytes as {kind}, not binary")
    mode = getattr(feature, "mode", None)
    if mode not in (None, "RGB"):  # the batch op decodes to RGB: a transform written for other channels would break
        raise ValueError(f"HFImageDataset: image_column={column!r} is Image(mode={mode!r}), but the images are "
                         "decoded to RGB, as Image(mode='RGB') gives them: cast the column to Image() "
                         f"(dataset.cast_column({column!r}, datasets.Image())) and, for grey images, put "
                         "Grayscale(num_output_channels=1) in the transform")


class _Chunk:
    """One Arrow chunk of the image column: its bytes as one uint8 tensor, the offsets, which rows have
    bytes, and the paths."""

    def __init__(self, chunk: Any) -> None:
        import numpy as np
        import pyarrow as pa

        values = chunk.field("bytes")
        kind = np.int64 if pa.types.is_large_binary(values.type) else np.int32  # binary: _image_field checked
        _, offsets, data = values.buffers()
        self.offsets = np.frombuffer(offsets, dtype=kind)[values.offset:values.offset + len(values) + 1] \
            if offsets is not None else np.zeros(len(values) + 1, dtype=kind)
        if data is None or data.size == 0:
            self.data = torch.empty(0, dtype=torch.uint8)
        else:
            with warnings.catch_warnings():  # Arrow's (memory-mapped) buffers are read-only; the op only reads
                warnings.simplefilter("ignore", UserWarning)
                self.data = torch.from_numpy(np.frombuffer(data, dtype=np.uint8))
        self.has_bytes = np.asarray(values.is_valid()) & np.asarray(chunk.is_valid())
        self.paths = chunk.field("path")


class HFImageDataset(FusedBatchMixin, Dataset):
    """A Hugging Face ``datasets.Dataset`` with an image column, as a map-style dataset whose images are decoded
    by spdl_torch's native decoders, the transform fused into one ``decode_images`` call per batch.

    Args:
        dataset (datasets.Dataset): e.g. ``load_dataset("imagefolder", data_dir=..., split="train")``,
            ``load_dataset("parquet", data_files=..., split="train")``, ``Dataset.from_dict(...)`` with an
            ``Image`` feature; its ``select`` / ``shuffle`` / ``filter`` indices are followed. Not copied, not
            changed (its format and transform are not used: the column is read from the Arrow table).
        image_column (str): the column of images: an ``Image`` feature (``decode=True`` or ``False``) or a
            struct of ``bytes`` (binary) and ``path`` (string). A row's bytes are decoded; a row without bytes
            has its ``path`` read (a local file).
        label_column (str or None): the column of targets (e.g. a ``ClassLabel``); ``None``: the targets are
            the indices.
        transform (callable, optional): a ``torchvision.transforms`` (v1) or ``v2`` pipeline of a ``PIL.Image``,
            as the ``Image`` feature decodes it (v2 transforms then run Pillow's kernels, as with
            ``set_transform``); its fusable prefix runs inside the batch op (see :mod:`spdl_torch.transforms`),
            the rest after it.
        target_transform (callable, optional): applied to the target.
        seed, max_pixels, max_bytes, warn_unfused, require_fused: as :class:`FileListDataset`'s (``max_bytes``
            also limits a row's bytes).

    ``ds[i]`` is ``(image, target)``: the image decoded to RGB (as ``Image(mode="RGB")`` or
    ``.convert("RGB")`` gives it, also for a grey or RGBA file, where ``Image()`` gives the file's own mode),
    turned upright by its EXIF orientation (as the ``Image`` feature does), then ``transform`` (without a
    transform: a uint8 Tensor[3, H, W]); ``ds.__getitems__(indices)`` decodes a batch in one call (the images
    are rows of one batch tensor: :func:`collate`, the default ``collate_fn`` of :class:`spdl_torch.DataLoader`,
    returns it without a copy). A row that cannot be decoded raises :class:`spdl_torch.DecodeError` naming the column
    and row (``image[17]``, and its path if the row has one); ``on_error="skip"`` skips it.

    Attributes:
        dataset: the ``datasets.Dataset``.
        classes (list[str] or None): the ``ClassLabel`` names of ``label_column``, else ``None``.
        targets (list): the target of each row (before ``target_transform``).

    Raises:
        ImportError: the ``datasets`` package is not installed.
        TypeError: ``dataset`` is not a ``datasets.Dataset`` (a ``DatasetDict``: the message names its splits).
        ValueError: ``image_column`` / ``label_column`` is not a column, or the image column holds no images
            or is an ``Image(mode=...)`` other than ``"RGB"``; ``require_fused=True`` and the transform is not
            fully fused.
    """

    def __init__(
        self,
        dataset: Any,
        image_column: str = "image",
        label_column: str | None = "label",
        transform: Callable | None = None,
        target_transform: Callable | None = None,
        seed: int | None = None,
        *,
        max_pixels: int | None = None,
        max_bytes: int | None = None,
        warn_unfused: bool = True,
        require_fused: bool = False,
    ) -> None:
        _check_dataset(dataset)
        _image_field(dataset, image_column)
        if label_column is not None and label_column not in dataset.column_names:
            raise ValueError(f"HFImageDataset: label_column={label_column!r} is not a column of the dataset "
                             f"(columns: {dataset.column_names}); pass label_column=None for index targets")
        self.dataset = dataset
        self.image_column = image_column
        self.label_column = label_column
        self.transform = transform
        self.target_transform = target_transform
        feature = dataset.features[label_column] if label_column is not None else None
        self.classes = list(feature.names) if hasattr(feature, "names") else None
        self.targets = list(range(len(dataset))) if label_column is None else list(_column(dataset, label_column))
        self._lock = threading.Lock()
        self._table: Any = None
        self._init_fused(seed, input="pil")
        self._init_fusion(warn_unfused, require_fused, True, max_pixels, max_bytes)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_lock"], state["_table"] = None, None  # made again where it is used
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.targets)

    def _target(self, index: int) -> Any:
        return self.targets[index]

    def _columns(self) -> tuple[Any, list[int], list[_Chunk | None], Any]:
        """(the image column, its chunks' starts, the chunks read so far, the indices mapping as numpy or
        None), made on first use."""
        table = self._table
        if table is None:
            with self._lock:
                if self._table is None:
                    column = self.dataset.data.column(self.image_column)
                    starts, n = [], 0
                    for chunk in column.chunks:
                        starts.append(n)
                        n += len(chunk)
                    mapping = self.dataset._indices  # select / shuffle / filter: row i is physical row mapping[i]
                    rows = None if mapping is None else mapping.column(0).to_numpy()
                    self._table = (column, starts, [None] * column.num_chunks, rows)
                table = self._table
        return table

    def _row(self, index: int) -> tuple[torch.Tensor | None, str | None]:
        """Row ``index``'s encoded bytes (a view of the Arrow buffer) or ``None``, and its path."""
        column, starts, chunks, rows = self._columns()
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"HFImageDataset: index {index} is out of range for {n} rows")
        index = index + n if index < 0 else index
        row = int(rows[index]) if rows is not None else index
        c = bisect.bisect_right(starts, row) - 1
        chunk = chunks[c]
        if chunk is None:
            chunk = chunks[c] = _Chunk(column.chunk(c))
        j = row - starts[c]
        path = chunk.paths[j].as_py()
        if not chunk.has_bytes[j]:
            return None, path
        return chunk.data[int(chunk.offsets[j]):int(chunk.offsets[j + 1])], path

    def _name(self, index: int, path: str | None) -> str:
        return f"{self.image_column}[{index}]" + (f" ({path})" if path else "")

    def _sources(self, indices: Sequence[int]) -> tuple[list[Any], list[str], list[Any]]:
        from ..io import read_file

        max_bytes = self._max_bytes()
        datas, names = [], []
        for i in indices:
            data, path = self._row(i)
            if data is None:
                if path is None:
                    raise ValueError(f"HFImageDataset: {self.image_column}[{i}] has neither bytes nor a path")
                data = read_file(path, max_bytes=max_bytes)
            elif 0 < max_bytes < data.numel():
                raise OSError(errno.EFBIG, f"cannot read {self._name(i, path)}: its {data.numel()} bytes exceed the "
                              f"limit of {max_bytes} bytes (max_bytes)")
            datas.append(as_pillow_decodes(data, exif_transpose=True))  # a 16-bit grey file as Image(mode="RGB")
            names.append(self._name(i, path))
        return datas, names, [self._transformed_target(i) for i in indices]

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """``(image, target)`` of row ``index`` (see the class docstring)."""
        index = int(index)
        if self.plan is not None:
            return self._fused_items([index])[0]
        from .._errors import DecodeError
        from .._pil import to_pil
        from ..io import decode_image

        datas, names, targets = self._sources([index])
        try:
            image = decode_image(datas[0], max_pixels=self._max_pixels())
        except DecodeError as e:
            raise DecodeError(f"{names[0]}: {e.reason}", path=names[0], reason=e.reason) from None
        if self.transform is not None:  # unfused: the PIL image the Image feature gives
            image = self.transform(to_pil(image))
        return image, targets[0]

    def __repr__(self) -> str:
        plan = self._plan_text().replace("\n", "\n    ")
        return (f"{type(self).__name__}(num_rows={len(self)}, image_column={self.image_column!r}, "
                f"label_column={self.label_column!r},\n    {plan}\n)")


def _column(dataset: Any, name: str) -> list:
    """Column ``name`` of ``dataset`` in row order (its indices mapping followed), as Python values."""
    values = dataset.data.column(name)
    mapping = dataset._indices
    if mapping is not None:
        values = values.take(mapping.column(0))
    return values.to_pylist()

