"""icefloe.txn layer (see DESIGN.md §2)."""
