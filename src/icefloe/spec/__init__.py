"""icefloe.spec layer (see ARCHITECTURE.md)."""
