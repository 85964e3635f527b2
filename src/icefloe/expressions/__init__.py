"""icefloe.expressions layer (see DESIGN.md §2)."""
