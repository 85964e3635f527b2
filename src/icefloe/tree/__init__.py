"""icefloe.tree layer (see DESIGN.md §2)."""
