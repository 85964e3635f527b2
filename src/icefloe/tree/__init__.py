"""icefloe.tree: the two seams (DESIGN.md §1) and nothing else knows the metadata tree's shape.

- read seam (:mod:`icefloe.tree.read_seam`): ``manifest_refs``, ``read_entries``, ``live_entries``
  give version-neutral entries with inheritance applied (dispatching to ``v3_read`` / ``v4_read``);
- write seam (:mod:`icefloe.tree.write_seam`): ``write_snapshot_tree`` turns a
  ``TreeWriteRequest`` (parent snapshot plus a ``TreeChange``) into the new snapshot's tree and
  returns a ``TreeResult`` (dispatching to ``v3_write`` / ``v4_write``);
- :mod:`icefloe.tree.changes`: the types both seams share;
- :mod:`icefloe.tree.locations`: where new manifests, manifest lists and data files go;
- :mod:`icefloe.tree.summary`: the standard snapshot summary counters.
"""
