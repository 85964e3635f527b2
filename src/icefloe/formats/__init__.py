"""icefloe.formats layer (see ARCHITECTURE.md)."""
