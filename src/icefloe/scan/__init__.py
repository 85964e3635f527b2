"""icefloe.scan layer (see DESIGN.md §2)."""
