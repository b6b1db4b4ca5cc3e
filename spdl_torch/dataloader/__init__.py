"""The machinery of :class:`spdl_torch.DataLoader`, a drop-in for :class:`torch.utils.data.DataLoader`: threads
(on :mod:`spdl_torch.pipeline`) for native datasets, torch's own worker processes for Python-bound ones
(``worker_mode``, rule in ``_mode``).

On threads: no dataset pickling, no shared-memory tensor transfer, no fork/spawn start-up. This pays off when the
per-sample work runs in native code that releases the GIL (e.g. :mod:`spdl_torch.io`). Each thread still looks like a worker process to the code it runs
(:mod:`._worker`): its own dataset copy, ``torch.utils.data.get_worker_info()``, and protected global RNGs.

Modules: ``_loader`` (the class: torch's checks, ``__iter__``, state API), ``_iterator`` (epochs, engine run,
``__next__``), ``_map`` / ``_iterable`` (fetching and the request sources), ``_fetch`` (what both share),
``_worker`` (worker identity, seeding, RNG isolation), ``_state`` (the saved state), ``_source`` (how requests reach the engine), ``_messages``,
``_mode`` (threads or processes), ``_process`` (an epoch on torch's worker processes), ``_remainder``
(``worker_mode="hybrid"``: a Python remainder in worker processes), ``_finish`` (how a fused plan runs for the
loader: pinned, on the device, the remainder elsewhere), ``_device`` (the device copy), ``_torch`` (torch's class).

Public here: :class:`Stateful` (the protocol of what ``state_dict()`` saves) and :class:`WorkerInfo` (what
``spdl_torch.get_worker_info()`` returns). The loader itself is ``spdl_torch.DataLoader``.
"""

from ._state import Stateful
from ._worker import WorkerInfo

__all__ = ["Stateful", "WorkerInfo"]
