"""icefloe.tree: the two seams (ARCHITECTURE.md) and nothing else knows the metadata tree's shape.

- read seam (:mod:`icefloe.tree.read_seam`): ``manifest_refs``, ``read_entries``, ``live_entries``
  give version-neutral entries with inheritance applied;
- write seam (:mod:`icefloe.tree.write_seam`): ``write_snapshot_tree`` turns a parent snapshot plus a
  ``TreeChange`` into the new snapshot's tree and returns a ``TreeResult``;
- :mod:`icefloe.tree.locations`: where new manifests, manifest lists and data files go;
- :mod:`icefloe.tree.summary`: the standard snapshot summary counters.
"""
