import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.apache.iceberg.Files;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;

/**
 * A FileIO over the local file system ({@code /path} and {@code file:} locations), so the driver
 * needs neither Hadoop nor a cloud SDK on its class path (Iceberg's default FileIO is Hadoop's).
 */
public class LocalFileIO implements FileIO {
  static Path local(String location) {
    return location.startsWith("file:") ? Paths.get(URI.create(location)) : Paths.get(location);
  }

  @Override
  public InputFile newInputFile(String location) {
    return Files.localInput(local(location).toFile());
  }

  @Override
  public OutputFile newOutputFile(String location) {
    Path path = local(location);
    try {
      java.nio.file.Files.createDirectories(path.getParent());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Files.localOutput(path.toFile());
  }

  @Override
  public void deleteFile(String location) {
    try {
      java.nio.file.Files.deleteIfExists(local(location));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
