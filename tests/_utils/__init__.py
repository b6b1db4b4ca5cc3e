"""Helpers the tests share (the fixtures are in the conftest.py files). One module per subject: ``images``,
``audio``, ``video`` (synthetic media and their references), ``corpus`` (real media from Debian packages),
``augment`` (the reference executor of augment programs), ``stats`` (tests of random draws), ``loaders`` (both
DataLoaders side by side), ``shards``, ``tars`` and ``range_server`` (tar shards, forged members, an HTTP server),
``fake_cuda``, ``deploy``, ``waiting``. The ``run_*`` modules are the entry points of the tests' subprocesses
(torchrun ranks, exit scenarios, the hostile-input probe).
"""
