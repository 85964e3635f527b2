"""Puffin files and the deletion vectors (64-bit Roaring bitmaps) they carry."""
