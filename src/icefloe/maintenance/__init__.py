"""icefloe.maintenance layer (see DESIGN.md §2)."""
