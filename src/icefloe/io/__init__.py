"""icefloe.io layer (see ARCHITECTURE.md): FileIO over local and S3 file systems."""

from icefloe.io.fileio import FileIO, InputFile, OutputFile, load_file_io, normalize_location

__all__ = ["FileIO", "InputFile", "OutputFile", "load_file_io", "normalize_location"]
