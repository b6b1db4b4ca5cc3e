"""Developer tools that are not part of the spdl_torch package (run them from the repository root)."""
