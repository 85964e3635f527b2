"""icefloe.spec layer (see DESIGN.md §2)."""
