package icefloe.stream;

import java.io.IOException;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetPartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads a micro-batch's partitions with Spark's Parquet reader: Spark's own file partitions as they
 * are (columnar), {@link FileReaders.DeletesPartition}s row by row without their deleted rows.
 */
public final class NativeReaderFactory implements PartitionReaderFactory {
  private final ParquetPartitionReaderFactory plain;
  private final ParquetPartitionReaderFactory withRowIndex;
  private final StructType outputSchema;
  private final int rowIndexOrdinal;

  NativeReaderFactory(
      ParquetPartitionReaderFactory plain,
      ParquetPartitionReaderFactory withRowIndex,
      StructType outputSchema,
      int rowIndexOrdinal) {
    this.plain = plain;
    this.withRowIndex = withRowIndex;
    this.outputSchema = outputSchema;
    this.rowIndexOrdinal = rowIndexOrdinal;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return !(partition instanceof FileReaders.DeletesPartition) && plain.supportColumnarReads(partition);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return plain.createColumnarReader(partition);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    if (partition instanceof FileReaders.DeletesPartition) {
      return new SurvivingRows((FileReaders.DeletesPartition) partition);
    }
    return plain.createReader(partition);
  }

  /** The rows of a partition's files whose row index is not deleted, without the index column. */
  private final class SurvivingRows implements PartitionReader<InternalRow> {
    private final FileReaders.DeletesPartition partition;
    private final UnsafeProjection dropIndex = UnsafeProjection.create(outputSchema);
    private int file = -1;
    private PartitionReader<InternalRow> current;
    private InternalRow row;

    SurvivingRows(FileReaders.DeletesPartition partition) {
      this.partition = partition;
    }

    @Override
    public boolean next() throws IOException {
      PartitionedFile[] files = partition.files.files();
      while (true) {
        if (current == null) {
          if (file + 1 >= files.length) {
            return false;
          }
          file += 1;
          current = withRowIndex.buildReader(files[file]);
        }
        if (!current.next()) {
          current.close();
          current = null;
          continue;
        }
        InternalRow candidate = current.get();
        if (!partition.isDeleted(file, candidate.getLong(rowIndexOrdinal))) {
          row = candidate;
          return true;
        }
      }
    }

    @Override
    public InternalRow get() {
      return dropIndex.apply(row);
    }

    @Override
    public void close() throws IOException {
      if (current != null) {
        current.close();
        current = null;
      }
    }
  }
}
