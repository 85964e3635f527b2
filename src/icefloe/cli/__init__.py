"""icefloe.cli layer (see ARCHITECTURE.md)."""
