"""icefloe.catalog layer (see DESIGN.md §2)."""
