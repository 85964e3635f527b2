package icefloe;

import icefloe.stream.NativeMicroBatchStream;
import icefloe.stream.StreamPlanning;
import icefloe.stream.StreamPlanners;

import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScan;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The Python data source's scan, except that a streaming read the Python planner accepts
 * ({@link StreamPlanners#create}) becomes a {@link NativeMicroBatchStream}: planning stays in
 * Python on the driver, the rows are read by Spark's own Parquet reader.
 */
public class IcefloeScan extends PythonScan {
  private final StructType schema;
  private final CaseInsensitiveStringMap options;
  private volatile boolean nativeStream;

  public IcefloeScan(
      PythonDataSourceV2 source,
      String name,
      StructType schema,
      CaseInsensitiveStringMap options,
      Filter[] pushed) {
    super(source, name, schema, options, pushed);
    this.schema = schema;
    this.options = options;
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    StreamPlanning planning = StreamPlanners.create(options);
    if (planning == null) {
      return super.toMicroBatchStream(checkpointLocation);
    }
    nativeStream = true;
    return new NativeMicroBatchStream(planning, schema);
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return nativeStream ? ColumnarSupportMode.PARTITION_DEFINED : super.columnarSupportMode();
  }

  @Override
  public String description() {
    return nativeStream ? "icefloe native stream" : super.description();
  }
}
