"""icefloe.txn layer (see ARCHITECTURE.md)."""
