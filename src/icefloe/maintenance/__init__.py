"""icefloe.maintenance layer (see ARCHITECTURE.md)."""
