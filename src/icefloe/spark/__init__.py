"""icefloe.spark layer (see DESIGN.md §2)."""
