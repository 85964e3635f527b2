package icefloe.stream;

import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.parquet.hadoop.ParquetInputFormat;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.internal.config.ConfigEntry;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOptions;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport;
import org.apache.spark.sql.execution.datasources.parquet.ParquetReadSupport$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport$;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Input partitions of Parquet files and Spark's own Parquet reader factory for them.
 *
 * <p>A micro-batch without deleted rows is a list of Spark {@link FilePartition}s read by {@link
 * ParquetPartitionReaderFactory} (vectorized, columnar). A micro-batch where some file has deleted
 * positions is read row by row ({@link DeletesPartition}): the reader adds Spark's row-index column
 * and drops the rows whose index is deleted. Spark decides row or columnar per micro-batch, so a
 * batch is one or the other, never both.
 */
public final class FileReaders {
  private FileReaders() {}

  /** A data file to read whole, with its deleted row positions (sorted, maybe empty). */
  public static final class FileSpec {
    final String path;
    final long length;
    final long[] deleted;

    public FileSpec(String path, long length, long[] deleted) {
      this.path = path;
      this.length = length;
      this.deleted = deleted;
    }
  }

  /** The input partitions of one micro-batch: file groups as Spark partitions. */
  public static InputPartition[] partitions(List<List<FileSpec>> groups) {
    boolean anyDeleted =
        groups.stream().flatMap(List::stream).anyMatch(f -> f.deleted.length > 0);
    InputPartition[] out = new InputPartition[groups.size()];
    for (int i = 0; i < out.length; i++) {
      List<FileSpec> group = groups.get(i);
      PartitionedFile[] files = new PartitionedFile[group.size()];
      long[][] deleted = new long[group.size()][];
      for (int j = 0; j < files.length; j++) {
        FileSpec spec = group.get(j);
        files[j] = partitionedFile(spec);
        deleted[j] = spec.deleted;
      }
      FilePartition partition = new FilePartition(i, files);
      out[i] = anyDeleted ? new DeletesPartition(partition, deleted) : partition;
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static PartitionedFile partitionedFile(FileSpec spec) {
    return new PartitionedFile(
        InternalRow.empty(),
        SparkPath.fromUrlString(spec.path),
        0L,
        spec.length,
        new String[0],
        0L,
        spec.length,
        (scala.collection.immutable.Map<String, Object>)
            (scala.collection.immutable.Map<?, ?>) scala.collection.immutable.Map$.MODULE$.empty());
  }

  /** Spark's Parquet readers for the files (with field ids) and for files with deleted rows. */
  public static NativeReaderFactory factory(StructType fileSchema, StructType outputSchema) {
    StructType withIndex =
        fileSchema.add(
            ParquetFileFormat$.MODULE$.ROW_INDEX_TEMPORARY_COLUMN_NAME(), DataTypes.LongType, true);
    return new NativeReaderFactory(
        parquetFactory(fileSchema), parquetFactory(withIndex), outputSchema, fileSchema.length());
  }

  /** What Spark's own {@code ParquetScan.createReaderFactory} builds, for these columns. */
  @SuppressWarnings("unchecked")
  private static ParquetPartitionReaderFactory parquetFactory(StructType readSchema) {
    org.apache.spark.sql.classic.SparkSession session =
        (org.apache.spark.sql.classic.SparkSession) SparkSession.active();
    SQLConf conf = session.sessionState().conf();
    Configuration hadoop = session.sessionState().newHadoopConf();
    String json = readSchema.json();
    hadoop.set(ParquetInputFormat.READ_SUPPORT_CLASS, ParquetReadSupport.class.getName());
    hadoop.set(ParquetReadSupport$.MODULE$.SPARK_ROW_REQUESTED_SCHEMA(), json);
    hadoop.set(ParquetWriteSupport$.MODULE$.SPARK_ROW_SCHEMA(), json);
    hadoop.set(SQLConf.SESSION_LOCAL_TIMEZONE().key(), conf.sessionLocalTimeZone());
    // the settings ParquetScan copies for Spark's Parquet schema converter (read from Hadoop's conf)
    for (ConfigEntry<?> entry :
        List.of(
            SQLConf.CASE_SENSITIVE(),
            SQLConf.NESTED_SCHEMA_PRUNING_ENABLED(),
            SQLConf.PARQUET_BINARY_AS_STRING(),
            SQLConf.PARQUET_INT96_AS_TIMESTAMP(),
            SQLConf.PARQUET_INFER_TIMESTAMP_NTZ_ENABLED(),
            SQLConf.LEGACY_PARQUET_NANOS_AS_LONG(),
            SQLConf.PARQUET_READER_RESPECT_UNKNOWN_TYPE_ANNOTATION(),
            SQLConf.TIMESTAMP_NANOS_TYPES_ENABLED())) {
      hadoop.set(entry.key(), String.valueOf(conf.getConf(entry)));
    }
    Broadcast<SerializableConfiguration> broadcast =
        JavaSparkContext.fromSparkContext(session.sparkContext())
            .broadcast(new SerializableConfiguration(hadoop));
    scala.collection.immutable.Map<String, String> noOptions =
        (scala.collection.immutable.Map<String, String>)
            (scala.collection.immutable.Map<?, ?>) scala.collection.immutable.Map$.MODULE$.empty();
    return new ParquetPartitionReaderFactory(
        conf,
        broadcast,
        readSchema,
        readSchema,
        new StructType(),
        new Filter[0],
        scala.Option.empty(),
        new ParquetOptions(noOptions, conf));
  }

  /** A file partition some of whose files have deleted row positions. */
  public static final class DeletesPartition implements InputPartition {
    final FilePartition files;
    final long[][] deleted;

    DeletesPartition(FilePartition files, long[][] deleted) {
      this.files = files;
      this.deleted = deleted;
    }

    @Override
    public String[] preferredLocations() {
      return files.preferredLocations();
    }

    boolean isDeleted(int file, long position) {
      long[] positions = deleted[file];
      return positions.length > 0 && Arrays.binarySearch(positions, position) >= 0;
    }
  }
}
