package icefloe.stream;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A micro-batch stream whose offsets and files come from the Python planner and whose rows Spark's
 * vectorized Parquet reader reads ({@link FileReaders}): no row goes through Python.
 */
public class NativeMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final StreamPlanning planning;
  private final StructType outputSchema;
  private StructType fileSchema;

  public NativeMicroBatchStream(StreamPlanning planning, StructType outputSchema) {
    this.planning = planning;
    this.outputSchema = outputSchema;
  }

  @Override
  public Offset initialOffset() {
    return new JsonOffset(planning.initialOffset());
  }

  @Override
  public Offset deserializeOffset(String json) {
    return new JsonOffset(json);
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    JsonNode limits = parse(planning.readLimits());
    if (!limits.path("max_files").isNull() && !limits.path("max_files").isMissingNode()) {
      return ReadLimit.maxFiles(limits.get("max_files").asInt());
    }
    if (!limits.path("max_records").isNull() && !limits.path("max_records").isMissingNode()) {
      return ReadLimit.maxRows(limits.get("max_records").asLong());
    }
    return ReadLimit.allAvailable();
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used instead");
  }

  @Override
  public Offset latestOffset(Offset start, ReadLimit limit) {
    boolean limited = !(limit instanceof ReadAllAvailable);
    return new JsonOffset(planning.latestOffset(start.json(), limited));
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    planning.prepareForTriggerAvailableNow();
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    JsonNode groups = parse(planning.files(start.json(), end.json())).get("partitions");
    List<List<FileReaders.FileSpec>> partitions = new ArrayList<>();
    for (JsonNode group : groups) {
      List<FileReaders.FileSpec> files = new ArrayList<>();
      for (JsonNode file : group) {
        JsonNode deletedNode = file.path("deleted");
        long[] deleted = new long[deletedNode.size()];
        for (int i = 0; i < deleted.length; i++) {
          deleted[i] = deletedNode.get(i).asLong();
        }
        files.add(new FileReaders.FileSpec(file.get("path").asText(), file.get("length").asLong(), deleted));
      }
      partitions.add(files);
    }
    return FileReaders.partitions(partitions);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    if (fileSchema == null) {
      fileSchema = (StructType) DataType.fromJson(planning.fileSchema());
    }
    return FileReaders.factory(fileSchema, outputSchema);
  }

  @Override
  public void commit(Offset end) {
    // offsets are snapshots, which the table keeps: nothing to release
  }

  @Override
  public void stop() {}

  @Override
  public String toString() {
    return "IcefloeNativeStream";
  }

  private static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("icefloe planner returned malformed JSON: " + json, e);
    }
  }
}
