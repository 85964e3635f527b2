"""icefloe.scan layer (see ARCHITECTURE.md)."""
