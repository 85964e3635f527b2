"""icefloe.io layer (see DESIGN.md §2)."""
